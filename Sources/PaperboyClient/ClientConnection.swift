#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Paperboy
import PaperboyDaemon
import PaperboyFraming
import Synchronization

/// The client end of one daemon connection: requests matched to replies by id, events handed
/// to one consumer in order.
final class ClientConnection: Sendable {
    let fd: Int32
    let socket: URL
    /// The library the daemon serves, as its `HELLO` said.
    let library: String
    private let state = Mutex(State())
    private let writeLock = Mutex(())
    let events: AsyncStream<EventMessage>
    private let eventSink: AsyncStream<EventMessage>.Continuation

    private struct State {
        var nextID: Int64 = 1
        var waiting: [Int64: CheckedContinuation<Frame, any Error>] = [:]
        var closed = false
    }

    init(fd: Int32, socket: URL, library: String) {
        self.fd = fd
        self.socket = socket
        self.library = library
        (events, eventSink) = AsyncStream.makeStream(of: EventMessage.self)
    }

    /// Starts the reader thread.
    func start() {
        let thread = Thread { [self] in readLoop() }
        thread.name = "paperboy-client-read"
        thread.stackSize = 256 * 1024
        thread.start()
    }

    /// Sends a request and waits for its `OK` (or throws its `ERROR` as a ``LibraryError``).
    func request<Message: Encodable>(_ kind: String, _ make: (Int64) -> Message) async throws(LibraryError) -> OKReply {
        try await request(kind, as: OKReply.self, make)
    }

    /// Sends a request and decodes its `OK` as `Reply` (or throws its `ERROR` as a ``LibraryError``).
    func request<Message: Encodable, Reply: Decodable>(_ kind: String, as reply: Reply.Type,
                                                       _ make: (Int64) -> Message) async throws(LibraryError) -> Reply {
        let id = state.withLock { state -> Int64 in
            defer { state.nextID += 1 }
            return state.nextID
        }
        let frame = DaemonProtocol.frame(kind, make(id))
        let reply: Frame
        do {
            reply = try await withCheckedThrowingContinuation { continuation in
                let open = state.withLock { state -> Bool in
                    guard !state.closed else { return false }
                    state.waiting[id] = continuation
                    return true
                }
                guard open else {
                    continuation.resume(throwing: disconnected())
                    return
                }
                do {
                    try writeLock.withLock { _ throws(FrameIOError) in try FrameWriter.write(frame, to: fd, isSocket: true) }
                } catch {
                    if let continuation = state.withLock({ $0.waiting.removeValue(forKey: id) }) {
                        continuation.resume(throwing: disconnected())
                    }
                }
            }
        } catch let error as LibraryError {
            throw error
        } catch {
            throw disconnected()
        }
        if reply.kind == DaemonProtocol.Kind.error {
            let wire = (try? DaemonProtocol.decoder.decode(WireError.self, from: reply.payload))
            throw LibraryError(wire.map { LibraryError.Code($0.code) } ?? .transport, wire?.message ?? "the daemon refused \(kind)",
                               isRetryable: wire?.retryable ?? false)
        }
        do {
            return try DaemonProtocol.decode(Reply.self, reply)
        } catch {
            throw LibraryError(.transport, "the daemon at \(socket.path) answered \(kind) with \(error.message)")
        }
    }

    func close() {
        shutdown(fd, Int32(SHUT_RDWR))
    }

    private func disconnected() -> LibraryError {
        LibraryError(.transport, "the daemon at \(socket.path) closed the connection", isRetryable: true)
    }

    private func readLoop() {
        var reader = FrameReader()
        while true {
            guard let frame = try? reader.next(from: fd, maxLength: { _ in DaemonProtocol.maxPayloadLength }, wait: { _ in }) else { break }
            if frame.kind == DaemonProtocol.Kind.event {
                if let event = try? DaemonProtocol.decoder.decode(EventMessage.self, from: frame.payload) { eventSink.yield(event) }
                continue
            }
            guard let id = (try? DaemonProtocol.decoder.decode(RequestID.self, from: frame.payload))?.id,
                  let continuation = state.withLock({ $0.waiting.removeValue(forKey: id) }) else { continue }
            continuation.resume(returning: frame)
        }
        let waiting = state.withLock { state in
            state.closed = true
            defer { state.waiting = [:] }
            return Array(state.waiting.values)
        }
        for continuation in waiting { continuation.resume(throwing: disconnected()) }
        eventSink.finish()
        Glibc.close(fd)
    }

    /// Connects and exchanges `HELLO`.
    static func connect(socket: URL, name: String) async throws(LibraryError) -> ClientConnection {
        let fd = try DaemonSocket.connect(to: socket)
        guard fd >= 0 else {
            throw LibraryError(.transport, "no daemon listens on \(socket.path) (start one with 'paperboy daemon')", isRetryable: true)
        }
        // The daemon must be this user's too: a socket file can be replaced, a peer's uid cannot.
        let peer = DaemonSocket.peerUID(fd)
        guard peer == getuid() else {
            Glibc.close(fd)
            throw LibraryError(.transport, "the daemon at \(socket.path) runs as uid \(peer.map(String.init) ?? "unknown"), "
                                   + "not as this user (\(getuid())); not talking to it")
        }
        let hello: DaemonHello
        do {
            try FrameWriter.write(DaemonProtocol.frame(DaemonProtocol.Kind.hello, ClientHello(protocols: DaemonProtocol.versions, client: name)),
                                  to: fd, isSocket: true)
            var reader = FrameReader()
            let frame = try reader.next(from: fd, maxLength: { _ in DaemonProtocol.maxPayloadLength }, wait: { _ in })
            guard frame.kind == DaemonProtocol.Kind.hello else {
                let wire = try? DaemonProtocol.decoder.decode(WireError.self, from: frame.payload)
                Glibc.close(fd)
                throw LibraryError(.transport, "the daemon at \(socket.path) refused the connection: \(wire?.message ?? frame.kind)")
            }
            guard let answer = try? DaemonProtocol.decoder.decode(DaemonHello.self, from: frame.payload) else {
                Glibc.close(fd)
                throw LibraryError(.transport, "the daemon at \(socket.path) answered HELLO with an unreadable payload")
            }
            hello = answer
        } catch let error as LibraryError {
            throw error
        } catch {
            Glibc.close(fd)
            throw LibraryError(.transport, "cannot talk to the daemon at \(socket.path): \(error)", isRetryable: true)
        }
        let connection = ClientConnection(fd: fd, socket: socket, library: hello.library)
        connection.start()
        return connection
    }
}
