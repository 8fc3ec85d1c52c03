import Foundation
import PaperboyWire
import PaperboyFraming
import Synchronization

/// One client connection: its frames read and written by a ``FramedConnection``, what the
/// daemon keeps for it (negotiated, subscribed, the requests answered when done).
///
/// Progress events are coalesced per asset while they wait in the queue (the latest totals, the
/// bytes summed), so a slow client costs one entry per asset; a client that lets more than
/// ``maxQueued`` other frames pile up is disconnected.
final class DaemonConnection: Sendable {
    /// Frames waiting for a client before it is considered stuck and disconnected.
    static let maxQueued = 10_000

    let number: Int
    private let framed: FramedConnection
    private let state = Mutex(State())

    private struct State {
        /// The progress of an asset waiting for its turn in the queue.
        var progress: [String: Event] = [:]
        var ended = false
        var negotiated = false
        var subscribed = false
        /// Requests answered when done (`WAIT`), cancelled when the connection ends.
        var tasks: [Int: Task<Void, Never>] = [:]
        var taskCounter = 0
    }

    init(fd: Int32, number: Int) {
        self.number = number
        framed = FramedConnection(fd: fd, maxPayloadLength: DaemonProtocol.maxPayloadLength, queueLimit: Self.maxQueued)
    }

    /// Starts reading and writing: `handle` answers each frame, `ended` runs once the client left.
    func start(handle: @escaping @Sendable (Frame) -> Void, ended: @escaping @Sendable () -> Void) {
        // Requests are decoded on the reader's thread: a stack for JSON as deep as the reader lets in.
        framed.start(name: "paperboy-daemon-\(number)", readerStackSize: DaemonProtocol.jsonLimits.threadStackSize,
                     onFrame: handle) { [self] end in
            // Sent before the socket is shut down: the client learns why.
            switch end {
            case .malformed(let problem): sendError(WireError(DaemonProtocol.ErrorCode.malformedFrame, problem))
            case .tooLarge(let problem): sendError(WireError(DaemonProtocol.ErrorCode.frameTooLarge, problem))
            case .closed, .cut, .failed: break
            }
            endRequests()
            ended()
        }
    }

    var isNegotiated: Bool {
        get { state.withLock { $0.negotiated } }
        set { state.withLock { $0.negotiated = newValue } }
    }

    var isSubscribed: Bool { state.withLock { $0.subscribed } && framed.isOpen }

    /// Marks the connection subscribed and queues `replay` (pending deliveries) before any event
    /// queued after this call.
    func subscribe(replaying replay: [Event]) {
        state.withLock { state in
            guard !state.ended else { return }
            state.subscribed = true
            for event in replay { framed.send(DaemonProtocol.frame(DaemonProtocol.Kind.event, event)) }
        }
    }

    /// Queues a frame; returns `false` when the connection is closed or stuck (then closed).
    @discardableResult
    func send(_ frame: Data) -> Bool {
        framed.send(frame)
    }

    /// Queues an event for a subscribed client, coalescing progress of one asset.
    func send(event: Event) {
        guard case .progress(let asset, let bytesWritten, let total, let expected) = event else {
            state.withLock { state in
                if state.subscribed { framed.send(DaemonProtocol.frame(DaemonProtocol.Kind.event, event)) }
            }
            return
        }
        state.withLock { state in
            guard state.subscribed else { return }
            if case .progress(_, let waiting, _, _)? = state.progress[asset] {
                state.progress[asset] = .progress(asset: asset, bytesWritten: waiting &+ bytesWritten, totalBytesWritten: total,
                                                  expectedTotalBytes: expected)
                return
            }
            state.progress[asset] = event
            let queued = framed.send(deferred: { [self] in
                self.state.withLock { $0.progress.removeValue(forKey: asset) }.map { DaemonProtocol.frame(DaemonProtocol.Kind.event, $0) }
            })
            if !queued { state.progress[asset] = nil }
        }
    }

    /// Runs `body` (a request answered when done) in a task cancelled if the connection ends first.
    func run(_ body: @escaping @Sendable () async -> Void) {
        state.withLock { state in
            guard !state.ended else { return }
            state.taskCounter += 1
            let key = state.taskCounter
            // Created under the lock, so it is recorded before it can end and remove itself.
            state.tasks[key] = Task { [self] in
                await body()
                _ = self.state.withLock { $0.tasks.removeValue(forKey: key) }
            }
        }
    }

    /// Disconnects the client now: the reader sees the end, the writer stops, requests are cancelled.
    func close() {
        framed.close()
        endRequests()
    }

    /// Stops events and cancels the requests still running.
    private func endRequests() {
        let tasks = state.withLock { state -> [Task<Void, Never>] in
            state.ended = true
            state.subscribed = false
            defer { state.tasks = [:] }
            return Array(state.tasks.values)
        }
        for task in tasks { task.cancel() }
    }

    func sendError(_ error: WireError) {
        send(DaemonProtocol.frame(DaemonProtocol.Kind.error, error))
    }

    /// Closes once what is queued is written (or after 1 s): the last error reaches the client.
    func drainThenClose() {
        framed.closeAfterSending()
    }
}
