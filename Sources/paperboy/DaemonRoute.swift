#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Paperboy
import PaperboyConfig
import PaperboyDaemon
import PaperboyFraming

/// A connection to the daemon serving the configured library, for commands that go through
/// it when one answers on `[daemon] socket`; without one they work in-process.
///
/// The socket must be a socket of this user that nobody else can open (mode 0600 or
/// stricter): anything else is refused, not trusted, since the requests could go to another
/// user's program.
struct DaemonRoute {
    let socket: URL
    private let fd: Int32
    private var reader = FrameReader()
    private var nextID: Int64 = 1

    /// Why a socket is not one to talk to.
    struct Refusal: Error, CustomStringConvertible {
        var description: String
    }

    /// Connects and exchanges `HELLO`; `nil` when no daemon listens (no socket file, or nothing
    /// accepts on it).
    ///
    /// - Throws: ``Refusal`` for a socket file of another user or open to others, or a daemon
    ///   that refuses the connection.
    static func connect(_ config: PaperboyConfiguration, client: String) throws -> DaemonRoute? {
        let socket = config.daemon.socket
        var info = stat()
        guard lstat(socket.path, &info) == 0 else { return nil }
        guard info.st_mode & S_IFMT == S_IFSOCK else {
            throw Refusal(description: "\(socket.path) is not a socket; not using it")
        }
        guard info.st_uid == getuid(), info.st_mode & 0o077 == 0 else {
            throw Refusal(description: String(
                format: "%@ belongs to uid %d with mode %o; a daemon's socket is this user's (%d) with mode 0600: not using it",
                socket.path, Int(info.st_uid), Int(info.st_mode & 0o777), Int(getuid())))
        }
        let fd = try DaemonSocket.connect(to: socket)
        guard fd >= 0 else { return nil }
        var route = DaemonRoute(socket: socket, fd: fd)
        let hello = try route.exchange(DaemonProtocol.Kind.hello, ClientHello(protocols: DaemonProtocol.versions, client: client))
        guard hello.kind == DaemonProtocol.Kind.hello else {
            route.close()
            throw Refusal(description: "the daemon at \(socket.path) refused the connection: \(Self.message(hello))")
        }
        return route
    }

    private init(socket: URL, fd: Int32) {
        self.socket = socket
        self.fd = fd
    }

    /// Sends a request and waits for its `OK`, decoded as `Reply`.
    ///
    /// - Throws: ``LibraryError`` with the daemon's code and message for an `ERROR`, or
    ///   `.transport` when the daemon goes away.
    mutating func request<Message: Encodable, Reply: Decodable>(
        _ kind: String, _ make: (Int64) -> Message, reply: Reply.Type
    ) throws -> Reply {
        let id = nextID
        nextID += 1
        let answer = try exchange(kind, make(id))
        if answer.kind == DaemonProtocol.Kind.error {
            let wire = try? DaemonProtocol.decoder.decode(WireError.self, from: answer.payload)
            throw LibraryError(wire.map { LibraryError.Code($0.code) } ?? .transport, Self.message(answer))
        }
        do {
            return try DaemonProtocol.decoder.decode(reply, from: answer.payload)
        } catch {
            throw LibraryError(.transport, "the daemon at \(socket.path) answered \(kind) with an unreadable \(answer.kind)")
        }
    }

    func close() {
        Glibc.close(fd)
    }

    /// Writes one frame and reads until the first frame that is not an event.
    private mutating func exchange<Message: Encodable>(_ kind: String, _ message: Message) throws -> Frame {
        do {
            try FrameWriter.write(DaemonProtocol.frame(kind, message), to: fd, isSocket: true)
            while true {
                let frame = try reader.next(from: fd, maxLength: { _ in DaemonProtocol.maxPayloadLength }, wait: { _ in })
                if frame.kind != DaemonProtocol.Kind.event { return frame }
            }
        } catch {
            throw LibraryError(.transport, "the daemon at \(socket.path) stopped answering (\(kind)): \(error)")
        }
    }

    private static func message(_ frame: Frame) -> String {
        (try? DaemonProtocol.decoder.decode(WireError.self, from: frame.payload))?.message ?? frame.kind
    }
}
