#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Paperboy
import PaperboyWire
import PaperboyFraming
import Synchronization

/// The client end of one daemon connection: requests matched to replies by id, events handed
/// to one consumer in order.
///
/// Its frames are read and written by a ``FramedConnection``: a request is queued and awaited,
/// so a daemon that stops reading blocks the writer's thread only, never a thread of the
/// cooperative pool (the client's other tasks go on, and ``close()`` still ends every request).
final class ClientConnection: Sendable {
    let socket: URL
    /// The library the daemon serves, as its `HELLO` said.
    let library: String
    private let framed: FramedConnection
    private let state = Mutex(State())
    let events: AsyncStream<Event>
    private let eventSink: AsyncStream<Event>.Continuation
    /// Told each event on the reader's thread, before ``events`` is and before any later reply
    /// resumes its request (``observeEvents(_:)``).
    private let eventObserver = LockedFunction<@Sendable (Event) -> Void>()
    /// `CHALLENGE`s and `RESUMING`s from the daemon, apart from events: answering one must not
    /// wait behind them.
    let questions: AsyncStream<Question>
    private let questionSink: AsyncStream<Question>.Continuation

    /// A question the daemon asks the client that claimed an asset.
    enum Question: Sendable {
        case challenge(ChallengeMessage)
        case resuming(ResumingMessage)
    }

    private struct State {
        var nextID: Int64 = 1
        var waiting: [Int64: CheckedContinuation<CheckedFrame, any Error>] = [:]
        var closed = false
    }

    init(fd: Int32, socket: URL, library: String) {
        self.socket = socket
        self.library = library
        framed = FramedConnection(fd: fd, maxPayloadLength: DaemonProtocol.maxPayloadLength)
        (events, eventSink) = AsyncStream.makeStream(of: Event.self)
        (questions, questionSink) = AsyncStream.makeStream(of: Question.self)
    }

    /// Has `observer` told each event as it is read, on the reader's thread, before the event
    /// reaches ``events`` and before the reply to any request that follows it is handed over:
    /// what the observer records from events is current when a request's answer arrives (a
    /// `WAIT` answered `delivered` finds the asset delivered in the client's mirror). It must be
    /// quick and must not block. Set it before subscribing.
    func observeEvents(_ observer: @escaping @Sendable (Event) -> Void) {
        eventObserver.set(observer)
    }

    /// Starts reading and writing, going on with `reader`: the one that read the daemon's
    /// `HELLO`, which may hold the bytes of frames that followed it.
    func start(continuing reader: FrameReader) {
        // Replies are checked, and events decoded, on the reader's thread: a stack for the reader's depth.
        framed.start(name: "paperboy-client", readerStackSize: DaemonProtocol.jsonLimits.threadStackSize,
                     onFrame: { [self] in received($0) }, onEnd: { [self] in ended($0) }, continuing: reader)
    }

    /// Sends the request `make` builds with its `id` and decodes its `OK` as `Answer` (the type
    /// ``Reply/type(answering:)`` names for the kind), or throws its `ERROR` as a ``LibraryError``.
    func request<Answer: Decodable>(as answer: Answer.Type, _ make: (Int64) -> Request) async throws(LibraryError) -> Answer {
        do {
            return try await request(as: answer, cancellable: false, make)
        } catch let error as LibraryError {
            throw error
        } catch {
            throw disconnected()
        }
    }

    /// Queues the request `make` builds without waiting for its answer (dropped when it comes):
    /// it goes out before any request made after this call, and requests are answered in order.
    func post(_ make: (Int64) -> Request) {
        state.withLock { state in
            guard !state.closed else { return }
            defer { state.nextID += 1 }
            framed.send(make(state.nextID).frame)
        }
    }

    /// As ``request(as:_:)``, for a request answered when something happens (`WAIT`): cancelling
    /// the task stops waiting for the answer (throwing `CancellationError`), which is then dropped.
    func cancellableRequest<Answer: Decodable>(as answer: Answer.Type, _ make: (Int64) -> Request) async throws -> Answer {
        try await request(as: answer, cancellable: true, make)
    }

    private func request<Answer: Decodable>(as answer: Answer.Type, cancellable: Bool, _ make: (Int64) -> Request) async throws -> Answer {
        let id = state.withLock { state -> Int64 in
            defer { state.nextID += 1 }
            return state.nextID
        }
        let request = make(id)
        let kind = request.kind
        let frame = request.frame
        let reply: CheckedFrame = try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let open = state.withLock { state -> Bool in
                    guard !state.closed else { return false }
                    if cancellable, Task.isCancelled { return false }
                    // Queued under the lock: requests go out in the order of their ids.
                    guard framed.send(frame) else { return false }
                    state.waiting[id] = continuation
                    return true
                }
                guard open else {
                    continuation.resume(throwing: cancellable && Task.isCancelled ? CancellationError() : disconnected())
                    return
                }
            }
        } onCancel: {
            guard cancellable, let continuation = state.withLock({ $0.waiting.removeValue(forKey: id) }) else { return }
            continuation.resume(throwing: CancellationError())
        }
        if reply.kind == DaemonProtocol.Kind.error {
            guard let wire = try? DaemonProtocol.decode(WireError.self, reply) else {
                throw LibraryError(.transport, "the daemon refused \(kind)")
            }
            throw wire.libraryError
        }
        do {
            return try DaemonProtocol.decode(Answer.self, reply)
        } catch {
            throw LibraryError(.transport, "the daemon at \(socket.path) answered \(kind) with \(error.message)")
        }
    }

    /// Ends the connection: the reader sees the end and fails every request still waiting.
    func close() {
        framed.close()
    }

    private func disconnected(_ end: FramedConnection.End = .closed) -> LibraryError {
        let why = end.problem.map { ": \($0)" } ?? ""
        return LibraryError(.transport, "the daemon at \(socket.path) closed the connection\(why)", isRetryable: true)
    }

    /// A frame from the daemon: a reply to its request, an event, or a question.
    private func received(_ received: Frame) {
        let frame: CheckedFrame
        do {
            frame = try DaemonProtocol.reply(received)
        } catch {
            // A reply out of the limits fails its request (when its id came first); an event is dropped.
            guard let id = error.id, let continuation = state.withLock({ $0.waiting.removeValue(forKey: id) }) else { return }
            continuation.resume(throwing: LibraryError(.transport, "the daemon at \(socket.path) answered with \(error.message)"))
            return
        }
        if frame.kind == DaemonProtocol.Kind.event {
            if let event = try? DaemonProtocol.decode(Event.self, frame) {
                eventObserver.function?(event)
                eventSink.yield(event)
            }
            return
        }
        if frame.kind == DaemonProtocol.Kind.challenge {
            if let challenge = try? DaemonProtocol.decode(ChallengeMessage.self, frame) {
                questionSink.yield(.challenge(challenge))
            }
            return
        }
        if frame.kind == DaemonProtocol.Kind.resuming {
            if let resuming = try? DaemonProtocol.decode(ResumingMessage.self, frame) {
                questionSink.yield(.resuming(resuming))
            }
            return
        }
        guard let id = (try? DaemonProtocol.decode(EmptyReply.self, frame))?.id,
              let continuation = state.withLock({ $0.waiting.removeValue(forKey: id) }) else { return }
        continuation.resume(returning: frame)
    }

    /// The daemon left, broke the framing, or ``close()`` was called: every request still
    /// waiting fails (saying why), the streams end.
    private func ended(_ end: FramedConnection.End) {
        let waiting = state.withLock { state in
            state.closed = true
            defer { state.waiting = [:] }
            return Array(state.waiting.values)
        }
        for continuation in waiting { continuation.resume(throwing: disconnected(end)) }
        eventSink.finish()
        questionSink.finish()
    }

    /// Connects and exchanges `HELLO` on a thread of its own (a daemon that accepts and never
    /// answers must not hold a thread of the cooperative pool).
    static func connect(socket: URL, name: String, clock: any LibraryClock) async throws(LibraryError) -> ClientConnection {
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<ClientConnection, LibraryError>, Never>) in
            let thread = Thread {
                do throws(LibraryError) {
                    continuation.resume(returning: .success(try handshake(socket: socket, name: name, clock: clock)))
                } catch {
                    continuation.resume(returning: .failure(error))
                }
            }
            thread.name = "paperboy-client-connect"
            thread.stackSize = DaemonProtocol.jsonLimits.threadStackSize
            thread.start()
        }
        return try result.get()
    }

    /// How long the daemon has to answer `HELLO`.
    static let handshakeTimeout: Duration = .seconds(10)

    private static func handshake(socket: URL, name: String, clock: any LibraryClock) throws(LibraryError) -> ClientConnection {
        // The same check as every client door: no socket reached through a planted link or a
        // folder another user can change.
        if case .refused(let reason) = DaemonSocket.trust(socket) {
            throw LibraryError(.transport, "not using the daemon socket \(socket.path): \(reason)")
        }
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
        var reader = FrameReader()
        do {
            try FrameWriter.write(Request.hello(ClientHello(protocols: DaemonProtocol.versions, client: name)).frame, to: fd, isSocket: true)
            // Something that accepts and never answers (a wedged daemon) is not waited for forever.
            let received = try reader.next(from: fd, maxLength: { _ in DaemonProtocol.maxPayloadLength }, wait: { fd throws(FrameIOError) in
                try FrameWait.untilReady(fd, events: Int16(POLLIN), timeout: handshakeTimeout, sleep: { try await clock.sleep(for: $0) })
            })
            let frame = try? DaemonProtocol.reply(received)
            guard received.kind == DaemonProtocol.Kind.hello else {
                let wire = frame.flatMap { try? DaemonProtocol.decode(WireError.self, $0) }
                Glibc.close(fd)
                throw LibraryError(.transport, "the daemon at \(socket.path) refused the connection: \(wire?.message ?? received.kind)")
            }
            guard let answer = frame.flatMap({ try? DaemonProtocol.decode(DaemonHello.self, $0) }) else {
                Glibc.close(fd)
                throw LibraryError(.transport, "the daemon at \(socket.path) answered HELLO with an unreadable payload")
            }
            hello = answer
        } catch let error as LibraryError {
            throw error
        } catch FrameIOError.timedOut(let limit) {
            Glibc.close(fd)
            throw LibraryError(.transport, "the daemon at \(socket.path) did not answer HELLO within \(limit)", isRetryable: true)
        } catch {
            Glibc.close(fd)
            throw LibraryError(.transport, "cannot talk to the daemon at \(socket.path): \(error)", isRetryable: true)
        }
        let connection = ClientConnection(fd: fd, socket: socket, library: hello.library)
        connection.start(continuing: reader)
        return connection
    }
}
