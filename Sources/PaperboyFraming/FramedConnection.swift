#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Dispatch
import Foundation
import Synchronization

/// One side of a framed socket connection: a thread reading the peer's frames, a thread writing
/// what is queued for it. The daemon serves each client with one, the client talks to the
/// daemon through one (docs/Daemon.md); what the frames mean is theirs.
///
/// Nothing polls and nothing blocks the caller: ``send(_:)`` queues and returns, the reader
/// blocks in `read`, the writer on a semaphore, so a peer that stops reading holds the writer
/// alone. ``close()``, from any thread, shuts the socket down, which wakes both threads; what
/// was queued and not written is dropped. When the reader stops (the peer left, broke the
/// framing, or ``close()`` was called) `onEnd` is called once, on the reader's thread; what it
/// queues, and what was queued before, still goes out (for at most ``drainTimeout``) before the
/// socket is shut down. The last of the two threads to end closes the descriptor, never while the
/// other could still use its number.
package final class FramedConnection: Sendable {
    /// Why the reader stopped.
    package enum End: Sendable, Equatable {
        /// The peer closed its end between frames, or ``close()`` was called.
        case closed
        /// The peer sent something that is not a frame header (the text quotes it).
        case malformed(String)
        /// The peer announced a frame over the limit (the text names its kind, size and the limit).
        case tooLarge(String)
        /// The peer closed its end inside a frame (the text says where).
        case cut(String)
        /// Reading failed.
        case failed(String)

        /// What went wrong, for an error message; `nil` for a connection that simply closed.
        package var problem: String? {
            switch self {
            case .closed: nil
            case .malformed(let text), .tooLarge(let text), .cut(let text), .failed(let text): text
            }
        }
    }

    /// The socket; closed by the connection once both threads ended.
    package let fd: Int32
    /// The largest payload read; a longer frame ends the connection (``End/tooLarge(_:)``).
    package let maxPayloadLength: Int
    /// Frames waiting before the peer is considered stuck and the connection closed.
    package let queueLimit: Int
    /// How long what is queued may take to go out once the reader stopped.
    package let drainTimeout: Duration
    private let state = Mutex(State())
    /// Signalled once per queued frame, and by ``close()``.
    private let ready = DispatchSemaphore(value: 0)
    /// Signalled when the queue emptied while draining, or the connection closed.
    private let drained = DispatchSemaphore(value: 0)

    private struct State {
        enum Item {
            case frame(Data)
            case deferred(@Sendable () -> Data?)
        }
        /// Waiting frames from `head` on: taking one moves `head`, not the rest (a long queue of a
        /// slow peer costs O(1) per frame); the taken part is dropped once it is half the array.
        var queue: [Item] = []
        var head = 0
        var waiting: Int { queue.count - head }

        mutating func takeFirst() -> Item {
            let item = queue[head]
            head += 1
            if head == queue.count {
                queue.removeAll(keepingCapacity: true)
                head = 0
            } else if head > 64 && head * 2 > queue.count {
                queue.removeFirst(head)
                head = 0
            }
            return item
        }
        /// The writer holds a frame it took from the queue.
        var writing = false
        /// The reader stopped: nothing more is queued, what is queued goes out.
        var draining = false
        var closed = false
        /// The reader and the writer, until each ends.
        var threads = 2
    }

    /// A connection over `fd`, a connected stream socket (its threads start with ``start(name:readerStackSize:onFrame:onEnd:)``).
    package init(fd: Int32, maxPayloadLength: Int, queueLimit: Int = .max, drainTimeout: Duration = .seconds(1)) {
        self.fd = fd
        self.maxPayloadLength = maxPayloadLength
        self.queueLimit = queueLimit
        self.drainTimeout = drainTimeout
    }

    /// Starts the reader and the writer.
    ///
    /// - Parameters:
    ///   - name: the threads' names begin with it.
    ///   - readerStackSize: the reader's stack: `onFrame` runs on it.
    ///   - onFrame: called on the reader's thread with each frame, in order.
    ///   - onEnd: called once, on the reader's thread, when the reader stopped.
    ///   - reader: the reader to go on with: one that read a handshake before may hold the
    ///     bytes of frames that followed it.
    package func start(name: String, readerStackSize: Int, onFrame: @escaping @Sendable (Frame) -> Void,
                       onEnd: @escaping @Sendable (End) -> Void, continuing reader: FrameReader = FrameReader()) {
        let writer = Thread { [self] in writeLoop() }
        writer.name = "\(name)-write"
        writer.stackSize = 256 * 1024
        writer.start()
        let thread = Thread { [self] in readLoop(reader, onFrame: onFrame, onEnd: onEnd) }
        thread.name = "\(name)-read"
        thread.stackSize = readerStackSize
        thread.start()
    }

    /// Whether frames are still taken (neither closed nor draining).
    package var isOpen: Bool { state.withLock { !$0.closed && !$0.draining } }

    /// Whether both threads ended and the descriptor is closed.
    package var hasEnded: Bool { state.withLock { $0.threads == 0 } }

    /// Queues `frame`; returns `false` when the connection no longer takes frames, or when
    /// ``queueLimit`` frames wait already (then it is closed: the peer is stuck).
    @discardableResult
    package func send(_ frame: Data) -> Bool {
        enqueue(.frame(frame))
    }

    /// Queues a frame made when its turn to be written comes (`make` returns `nil`: nothing to
    /// write), for frames that gather what happens while they wait; as ``send(_:)`` otherwise.
    /// `make` runs on the writer's thread.
    @discardableResult
    package func send(deferred make: @escaping @Sendable () -> Data?) -> Bool {
        enqueue(.deferred(make))
    }

    private func enqueue(_ item: State.Item) -> Bool {
        let (queued, full) = state.withLock { state -> (Bool, Bool) in
            guard !state.closed, !state.draining else { return (false, false) }
            guard state.waiting < queueLimit else { return (false, true) }
            state.queue.append(item)
            return (true, false)
        }
        if queued { ready.signal() }
        if full { close() }
        return queued
    }

    /// Shuts the socket down now: the reader sees the end, the writer stops; what is queued is dropped.
    package func close() {
        let draining = state.withLock { state -> Bool? in
            guard !state.closed else { return nil }
            state.closed = true
            state.queue = []
            state.head = 0
            // Under the lock: once both threads ended, the number may be another socket's.
            shutdown(fd, Int32(SHUT_RDWR))
            return state.draining
        }
        guard let draining else { return }
        ready.signal()
        if draining { drained.signal() }
    }

    /// Takes no more frames, waits until what is queued is written (at most ``drainTimeout``),
    /// then closes: the last frame (an error saying why) reaches the peer. Blocks: call it on the
    /// reader's thread (from `onFrame`).
    package func closeAfterSending() {
        let pending = state.withLock { state -> Bool in
            guard !state.closed else { return false }
            state.draining = true
            return state.writing || state.waiting > 0
        }
        if pending { _ = drained.wait(timeout: .now() + drainTimeout / .seconds(1)) }
        close()
    }

    private func readLoop(_ reader: consuming FrameReader, onFrame: (Frame) -> Void, onEnd: (End) -> Void) {
        var reader = reader
        let end: End
        while true {
            let frame: Frame
            do {
                frame = try reader.next(from: fd, maxLength: { _ in maxPayloadLength }, wait: { _ in })
            } catch {
                end = ending(error, cut: reader.cutFrame)
                break
            }
            onFrame(frame)
        }
        onEnd(end)
        closeAfterSending()
        threadEnded()
    }

    private func ending(_ error: FrameIOError, cut: (kind: String, length: Int, received: Int)?) -> End {
        // Shut down from this side: whatever the last read saw, nothing went wrong.
        if state.withLock({ $0.closed }) { return .closed }
        switch error {
        case .closed:
            guard let cut else { return .closed }
            return .cut("the connection ended \(cut.received) bytes into a \(cut.kind) frame of \(cut.length) bytes")
        case .garbage(let quoted):
            return .malformed("not a frame header: \(quoted)")
        case .tooLarge(let kind, let length):
            return .tooLarge("\(kind) frame of \(length) bytes; the limit is \(maxPayloadLength)")
        case .system(let message):
            return .failed(message)
        case .timedOut, .abandoned:
            // The reader does not wait with a deadline: not reached.
            return .failed("\(error)")
        }
    }

    /// Writes queued frames until the connection closes.
    private func writeLoop() {
        while true {
            ready.wait()
            let next = state.withLock { state -> State.Item?? in
                if state.closed { return .some(nil) }
                guard state.waiting > 0 else { return nil }
                state.writing = true
                return state.takeFirst()
            }
            guard let next else { continue }
            guard let item = next else { break }
            // Made outside the lock: `make` may take its owner's.
            let frame: Data? = switch item {
            case .frame(let data): data
            case .deferred(let make): make()
            }
            var failed = false
            if let frame {
                do {
                    try FrameWriter.write(frame, to: fd, isSocket: true)
                } catch {
                    failed = true
                }
            }
            let emptied = state.withLock { state -> Bool in
                state.writing = false
                return state.draining && !state.closed && state.waiting == 0
            }
            if failed {
                // The peer is gone: the reader sees it too.
                close()
                break
            }
            if emptied { drained.signal() }
        }
        threadEnded()
    }

    private func threadEnded() {
        state.withLock { state in
            state.threads -= 1
            if state.threads == 0 {
                #if canImport(Glibc)
                _ = Glibc.close(fd)
                #else
                _ = Darwin.close(fd)
                #endif
            }
        }
    }
}
