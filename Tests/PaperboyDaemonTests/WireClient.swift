#if canImport(Glibc)
import Glibc
#endif
import Foundation
import PaperboyDaemon
import PaperboyWire
import PaperboyFraming
import PaperboyTestServers
import PaperboyTesting
import Synchronization

/// A JSON object as a test reads it.
typealias JSON = [String: Any]

/// A client speaking the daemon's protocol byte by byte, as a program without PaperboyClient
/// would: requests are JSON text, answers are frames. Its blocking reads and writes run on
/// threads of their own; a read that sees nothing for 30 s fails the test (a guard against a
/// hang, not a timing).
final class WireClient: Sendable {
    let fd: Int32
    private let reader = Mutex(FrameReader())
    /// `EVENT`s read while waiting for an answer, not yet looked at.
    private let events = Mutex<[Frame]>([])
    /// Every frame read, for failure messages.
    private let seen = Mutex<[String]>([])

    /// Connects to `socket` (no `HELLO` yet), on a thread of its own (`connect` blocks while the
    /// daemon's backlog is full).
    static func connect(_ socket: URL) async throws -> WireClient {
        try await offThePool { try WireClient(socket) }
    }

    private init(_ socket: URL) throws {
        fd = try DaemonSocket.connect(to: socket)
        guard fd >= 0 else { throw WireFailure("nothing listens on \(socket.path)") }
    }

    deinit { close(fd) }

    /// Connects and exchanges `HELLO`.
    static func negotiated(_ socket: URL) async throws -> WireClient {
        let client = try await connect(socket)
        let hello = try await client.request("HELLO", #"{"protocols":[1],"client":"wire test"}"#)
        guard hello.kind == "HELLO" else { throw WireFailure("HELLO answered with \(describe(hello))") }
        return client
    }

    func send(_ bytes: Data) async throws {
        try await offThePool { [fd] in try FrameWriter.write(bytes, to: fd, isSocket: true) }
    }

    func send(_ kind: String, _ json: String) async throws {
        try await send(Frame.encode(kind, Data(json.utf8)))
    }

    /// Leaves: the daemon sees the end of the connection.
    func disconnect() {
        shutdown(fd, Int32(SHUT_RDWR))
    }

    /// Ends what this client sends (`shutdown(SHUT_WR)`); it still reads.
    func endOutput() {
        shutdown(fd, Int32(SHUT_WR))
    }

    /// The next frame, or nil once the daemon has closed the connection.
    func next() async throws -> Frame? {
        let frame = try await offThePool { [self] () throws -> Frame? in
            try reader.withLock { reader throws -> Frame? in
                do throws(FrameIOError) {
                    return try reader.next(from: fd, maxLength: { _ in 1 << 20 }, wait: Self.waitReadable)
                } catch .closed {
                    return nil
                } catch .timedOut {
                    throw TimedOut("no frame from the daemon within 30 s; read before: \(seen.withLock { $0 })")
                } catch {
                    throw error
                }
            }
        }
        seen.withLock { $0.append(frame.map(Self.describe) ?? "(closed)") }
        return frame
    }

    /// The next frame that is not an `EVENT` (events are kept for ``event(_:where:)``).
    func answer() async throws -> Frame {
        while true {
            guard let frame = try await next() else {
                throw WireFailure("waited for an answer, but the daemon closed the connection; read: \(seen.withLock { $0 })")
            }
            if frame.kind == "EVENT" {
                events.withLock { $0.append(frame) }
                continue
            }
            return frame
        }
    }

    /// Sends a request and returns its answer.
    func request(_ kind: String, _ json: String) async throws -> Frame {
        try await send(kind, json)
        return try await answer()
    }

    /// The first event (kept or still to come) that `matches`; events before it are dropped.
    func event(_ what: String, where matches: (JSON) -> Bool) async throws -> JSON {
        while true {
            let kept = events.withLock { events -> Frame? in events.isEmpty ? nil : events.removeFirst() }
            let frame: Frame
            if let kept {
                frame = kept
            } else {
                guard let read = try await next() else {
                    throw WireFailure("waited for \(what), but the daemon closed the connection; read: \(seen.withLock { $0 })")
                }
                guard read.kind == "EVENT" else {
                    throw WireFailure("waited for \(what), but read \(Self.describe(read)); read: \(seen.withLock { $0 })")
                }
                frame = read
            }
            let object = json(frame)
            if matches(object) { return object }
        }
    }

    /// Reads until the daemon closes the connection; returns what came before.
    func framesUntilClosed() async throws -> [Frame] {
        var frames: [Frame] = []
        while let frame = try await next() { frames.append(frame) }
        return frames
    }

    /// The frames read so far, described.
    var transcript: [String] { seen.withLock { $0 } }

    private static func waitReadable(_ fd: Int32) throws(FrameIOError) {
        var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        if poll(&descriptor, 1, 30_000) == 0 { throw .timedOut(.seconds(30)) }
    }

    static func describe(_ frame: Frame) -> String {
        "\(frame.kind) \(String(decoding: frame.payload.prefix(300), as: UTF8.self))"
    }
}

/// A connection that could not be made or negotiated.
struct WireFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// The payload of `frame` as a JSON object (empty when it is not one).
func json(_ frame: Frame) -> JSON {
    (try? JSONSerialization.jsonObject(with: frame.payload)) as? JSON ?? [:]
}

/// The `code` of an `ERROR` frame (nil for any other frame).
func errorCode(_ frame: Frame) -> String? {
    frame.kind == "ERROR" ? json(frame)["code"] as? String : nil
}
