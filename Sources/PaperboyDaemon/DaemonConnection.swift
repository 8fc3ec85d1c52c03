#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import Foundation
import PaperboyWire
import PaperboyFraming
import Synchronization

/// One client connection: a thread reading its frames, a thread writing what is queued for it.
///
/// Nothing polls: the reader blocks in `read`, the writer on a semaphore; ``close()`` shuts the
/// socket down, which wakes both. Progress events are coalesced per asset while they wait in
/// the queue (the latest totals, the bytes summed), so a slow client costs one entry per asset;
/// a client that lets more than ``maxQueued`` other frames pile up is disconnected.
final class DaemonConnection: Sendable {
    /// Frames waiting for a client before it is considered stuck and disconnected.
    static let maxQueued = 10_000

    let fd: Int32
    let number: Int
    private let state = Mutex(State())
    private let ready = DispatchSemaphore(value: 0)

    private struct State {
        enum Item {
            case frame(Data)
            case progress(String)
        }
        var queue: [Item] = []
        var progress: [String: Event] = [:]
        var closed = false
        var negotiated = false
        var subscribed = false
        /// Requests answered when done (`WAIT`), cancelled when the connection ends.
        var tasks: [Int: Task<Void, Never>] = [:]
        var taskCounter = 0
        /// The reader and the writer; the last one to end closes the descriptor (never while
        /// the other could still use its number).
        var threads = 2
    }

    init(fd: Int32, number: Int) {
        self.fd = fd
        self.number = number
    }

    var isNegotiated: Bool {
        get { state.withLock { $0.negotiated } }
        set { state.withLock { $0.negotiated = newValue } }
    }

    var isSubscribed: Bool { state.withLock { $0.subscribed && !$0.closed } }

    /// Marks the connection subscribed and queues `replay` (pending deliveries) before any event
    /// queued after this call.
    func subscribe(replaying replay: [Event]) {
        state.withLock { state in
            state.subscribed = true
            for event in replay { state.queue.append(.frame(DaemonProtocol.frame(DaemonProtocol.Kind.event, event))) }
        }
        for _ in replay { ready.signal() }
    }

    /// Queues a frame; returns `false` when the connection is closed or stuck (then closed).
    @discardableResult
    func send(_ frame: Data) -> Bool {
        let accepted = state.withLock { state -> Bool in
            guard !state.closed, state.queue.count < Self.maxQueued else { return false }
            state.queue.append(.frame(frame))
            return true
        }
        if accepted { ready.signal() } else { close() }
        return accepted
    }

    /// Queues an event for a subscribed client, coalescing progress of one asset.
    func send(event: Event) {
        guard case .progress(let asset, let bytesWritten, let total, let expected) = event else {
            if isSubscribed { send(DaemonProtocol.frame(DaemonProtocol.Kind.event, event)) }
            return
        }
        let queued = state.withLock { state -> Bool in
            guard state.subscribed, !state.closed else { return false }
            if case .progress(_, let waiting, _, _)? = state.progress[asset] {
                state.progress[asset] = .progress(asset: asset, bytesWritten: waiting &+ bytesWritten, totalBytesWritten: total,
                                                  expectedTotalBytes: expected)
                return false
            }
            state.progress[asset] = event
            state.queue.append(.progress(asset))
            return true
        }
        if queued { ready.signal() }
    }

    /// Runs `body` (a request answered when done) in a task cancelled if the connection ends first.
    func run(_ body: @escaping @Sendable () async -> Void) {
        state.withLock { state in
            guard !state.closed else { return }
            state.taskCounter += 1
            let key = state.taskCounter
            // Created under the lock, so it is recorded before it can end and remove itself.
            state.tasks[key] = Task { [self] in
                await body()
                _ = self.state.withLock { $0.tasks.removeValue(forKey: key) }
            }
        }
    }

    /// Shuts the socket down: the reader sees the end, the writer stops and closes it.
    func close() {
        let (first, tasks) = state.withLock { state -> (Bool, [Task<Void, Never>]) in
            defer {
                state.closed = true
                state.tasks = [:]
            }
            return (!state.closed, Array(state.tasks.values))
        }
        for task in tasks { task.cancel() }
        if first {
            shutdown(fd, Int32(SHUT_RDWR))
            ready.signal()
        }
    }

    /// Writes queued frames until the connection closes, then closes the descriptor.
    func runWriter() {
        while true {
            ready.wait()
            let next = state.withLock { state -> Data?? in
                guard !state.closed, !state.queue.isEmpty else { return state.closed ? .some(nil) : nil }
                switch state.queue.removeFirst() {
                case .frame(let data): return data
                case .progress(let asset):
                    guard let event = state.progress.removeValue(forKey: asset) else { return nil }
                    return DaemonProtocol.frame(DaemonProtocol.Kind.event, event)
                }
            }
            guard let next else { continue }
            guard let frame = next else { break }
            do {
                try FrameWriter.write(frame, to: fd, isSocket: true)
            } catch {
                close()
                break
            }
        }
        threadEnded()
    }

    private func threadEnded() {
        let last = state.withLock { state -> Bool in
            state.threads -= 1
            return state.threads == 0
        }
        if last { Glibc.close(fd) }
    }

    /// Reads frames until the client leaves or breaks the framing; `handle` answers each.
    func runReader(handle: (Frame) -> Void) {
        var reader = FrameReader()
        while true {
            let frame: Frame
            do {
                frame = try reader.next(from: fd, maxLength: { _ in DaemonProtocol.maxPayloadLength }, wait: { _ in })
            } catch {
                switch error {
                case .garbage(let quoted):
                    sendError(WireError(DaemonProtocol.ErrorCode.malformedFrame, "not a frame header: \(quoted)"))
                case .tooLarge(let kind, let length):
                    sendError(WireError(
                        DaemonProtocol.ErrorCode.frameTooLarge,
                        "\(kind) frame of \(length) bytes; the limit is \(DaemonProtocol.maxPayloadLength)"))
                default: break
                }
                break
            }
            handle(frame)
        }
        // Let the error frame go out before the socket is shut down.
        state.withLock { $0.subscribed = false }
        drainThenClose()
        threadEnded()
    }

    func sendError(_ error: WireError) {
        send(DaemonProtocol.frame(DaemonProtocol.Kind.error, error))
    }

    /// Closes once the queue is empty (or after 1 s): the last error reaches the client.
    func drainThenClose() {
        for _ in 0..<100 {
            if state.withLock({ $0.queue.isEmpty || $0.closed }) { break }
            usleep(10_000)
        }
        close()
    }
}
