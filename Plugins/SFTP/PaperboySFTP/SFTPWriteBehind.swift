import Dispatch
import Foundation
import Paperboy
import Synchronization

/// Hands chunks read on session threads to the sink on a serial queue, so that decrypting the
/// next chunk (session thread) overlaps writing this one to the file (`write(2)`, which took
/// about a third of the session thread's time when done inline).
///
/// Memory is bounded: a fixed pool of `bufferCount` buffers of `bufferSize` bytes, allocated
/// once. A reader takes a free buffer, fills it and submits it; when none is free it pauses
/// until one is written. Chunks reach each target in the order they were submitted, and every
/// sink call is made from the queue, one at a time, so the sink's "calls never overlap" rule holds
/// even when several sessions read ranges of one file.
final class SFTPWriteBehind: @unchecked Sendable {
    /// Where chunks go: the transfer's sink or one of its segments.
    struct Target: Sendable {
        let tryWrite: @Sendable (UnsafeRawBufferPointer) throws -> Bool
        let whenWritable: @Sendable (@escaping @Sendable () -> Void) -> Void
    }

    /// One buffer of the pool; only the reader that took it, then the queue, touch its bytes.
    struct Buffer: @unchecked Sendable {
        let pointer: UnsafeMutableRawPointer
    }

    private struct Chunk: Sendable {
        var buffer: Buffer
        var count: Int
        var target: Int
    }

    private struct State {
        var targets: [Target] = []
        var free: [Buffer]
        var queued: [Chunk] = []
        /// A drain is scheduled, running or waiting for the sink's `whenWritable`.
        var draining = false
        /// A drain is executing on the queue (a sink call may be in progress).
        var running = false
        var failure: (any Error)?
        var closed = false
        /// The sink pushed back and its `whenWritable` callback has not run yet: calling it
        /// again before then would break its contract.
        var awaitingWritable = false
        var bufferWaiters: [@Sendable () -> Void] = []
        var drainWaiters: [@Sendable () -> Void] = []
        var closeWaiter: CheckedContinuation<Void, Never>?
    }

    let bufferSize: Int
    private let buffers: [Buffer]
    private let state: Mutex<State>
    private let queue = DispatchQueue(label: "paperboy-sftp-write-behind")

    init(bufferSize: Int, bufferCount: Int) {
        self.bufferSize = bufferSize
        buffers = (0..<max(2, bufferCount)).map { _ in Buffer(pointer: .allocate(byteCount: bufferSize, alignment: 16)) }
        state = Mutex(State(free: buffers))
    }

    deinit {
        for buffer in buffers { buffer.pointer.deallocate() }
    }

    /// Adds a destination and returns its index for ``submit(_:count:to:)``.
    func addTarget(_ target: Target) -> Int {
        state.withLock { state in
            state.targets.append(target)
            return state.targets.count - 1
        }
    }

    /// Adds the transfer's sink as a destination.
    func addTarget(_ sink: any TransferSink) -> Int {
        addTarget(Target(tryWrite: { try sink.tryWrite($0) }, whenWritable: { sink.whenWritable($0) }))
    }

    /// The error that stopped writing (the sink threw), if any.
    var failure: (any Error)? { state.withLock { $0.failure } }

    /// Whether every submitted chunk has been written (nothing queued).
    var isIdle: Bool { state.withLock { $0.queued.isEmpty } }

    /// Whether ``close(flushing:)`` has begun: nothing is queued any more.
    var isClosed: Bool { state.withLock { $0.closed } }

    /// A free buffer, or `nil` after arranging for `onFree` to run once one is free again.
    func takeBuffer(orWhenFree onFree: @escaping @Sendable () -> Void) -> Buffer? {
        let buffer = state.withLock { state -> Buffer? in
            if state.failure != nil || state.closed { return nil }
            if let buffer = state.free.popLast() { return buffer }
            state.bufferWaiters.append(onFree)
            return nil
        }
        if buffer == nil, failure != nil { onFree() }
        return buffer
    }

    /// Returns a buffer that was taken but not submitted.
    func giveBack(_ buffer: Buffer) {
        let waiters = state.withLock { state -> [@Sendable () -> Void] in
            state.free.append(buffer)
            defer { state.bufferWaiters.removeAll() }
            return state.bufferWaiters
        }
        for waiter in waiters { waiter() }
    }

    /// Queues the first `count` bytes of `buffer` (taken with ``takeBuffer(orWhenFree:)``) for `target`.
    func submit(_ buffer: Buffer, count: Int, to target: Int) {
        let start = state.withLock { state -> Bool in
            state.queued.append(Chunk(buffer: buffer, count: count, target: target))
            guard !state.draining, !state.closed, state.failure == nil else { return false }
            state.draining = true
            return true
        }
        if start { queue.async { [self] in drain() } }
    }

    /// Calls `callback` once every chunk submitted so far is written, or writing failed.
    func whenDrained(_ callback: @escaping @Sendable () -> Void) {
        let now = state.withLock { state -> Bool in
            if state.queued.isEmpty || state.failure != nil || state.closed { return true }
            state.drainWaiters.append(callback)
            return false
        }
        if now { callback() }
    }

    /// Returns once every chunk submitted so far is written, or at once when the task is
    /// cancelled (the writer goes on; ``close()`` stops it).
    ///
    /// - Throws: the error that stopped writing, `CancellationError` if the task was cancelled or
    ///   the writer closed.
    func drained() async throws {
        let waiter = Mutex<(continuation: CheckedContinuation<Void, Never>?, over: Bool)>((nil, false))
        let end: @Sendable () -> Void = {
            waiter.withLock { state -> CheckedContinuation<Void, Never>? in
                state.over = true
                defer { state.continuation = nil }
                return state.continuation
            }?.resume()
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let over = waiter.withLock { state -> Bool in
                    if !state.over { state.continuation = continuation }
                    return state.over
                }
                if over { continuation.resume() } else { whenDrained(end) }
            }
        } onCancel: {
            end()
        }
        let (failure, closed) = state.withLock { ($0.failure, $0.closed) }
        if let failure { throw failure }
        if closed { throw CancellationError() }
        try Task.checkCancellation()
    }

    /// Stops writing and returns once no sink call is in progress. After it returns the sink is
    /// never called again (its file may be closed).
    ///
    /// With `flushing` (a cancelled transfer: Ctrl-C, SIGTERM, a pause), the queued chunks still
    /// reach their targets, in order, as far as the sink takes them without waiting (all of them
    /// without a bandwidth limit), so the stop records those bytes and the next attempt does not
    /// fetch them again; at the sink's first push back or failure the rest is dropped, so a slow
    /// limit cannot hold the stop. Without it, queued chunks are dropped.
    func close(flushing: Bool = false) async {
        var leftover: [(Chunk, Target)] = []
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let (resumeNow, waiters) = state.withLock { state -> (Bool, [@Sendable () -> Void]) in
                state.closed = true
                if flushing, state.failure == nil {
                    // While a drain runs, the first queued chunk is the one it is writing.
                    leftover = state.queued.dropFirst(state.running ? 1 : 0).map { ($0, state.targets[$0.target]) }
                }
                for chunk in state.queued { state.free.append(chunk.buffer) }
                state.queued.removeAll()
                let waiters = state.bufferWaiters + state.drainWaiters
                state.bufferWaiters.removeAll()
                state.drainWaiters.removeAll()
                if state.running {
                    state.closeWaiter = continuation
                    return (false, waiters)
                }
                return (true, waiters)
            }
            for waiter in waiters { waiter() }
            if resumeNow { continuation.resume() }
        }
        // No drain runs now, and none will call the sink again (closed): the leftover chunks are
        // written on the queue (not on the caller's thread, which may be the cooperative pool),
        // in the order they were queued. Their buffers are back in the free list, but nothing
        // takes them once closed. A sink still owing its `whenWritable` callback is not called.
        guard !leftover.isEmpty, state.withLock({ !$0.awaitingWritable && $0.failure == nil }) else { return }
        let chunks = leftover
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            queue.async {
                for (chunk, target) in chunks {
                    let pointer = UnsafeRawBufferPointer(start: chunk.buffer.pointer, count: chunk.count)
                    guard (try? target.tryWrite(pointer)) == true else { break }
                }
                continuation.resume()
            }
        }
    }

    // MARK: The queue

    private func drain() {
        while true {
            let next = state.withLock { state -> (Chunk, Target)? in
                guard !state.closed, state.failure == nil, let chunk = state.queued.first else {
                    state.draining = false
                    return nil
                }
                state.running = true
                return (chunk, state.targets[chunk.target])
            }
            guard let (chunk, target) = next else {
                stopped(failure: nil)
                return
            }
            let written: Bool
            do {
                written = try target.tryWrite(UnsafeRawBufferPointer(start: chunk.buffer.pointer, count: chunk.count))
            } catch {
                stopped(failure: error)
                return
            }
            if !written {
                // Still draining: the sink pushes back; go on when it says so.
                if !stopped(failure: nil, keepsDraining: true) {
                    target.whenWritable { [self] in
                        state.withLock { $0.awaitingWritable = false }
                        queue.async { [self] in drain() }
                    }
                }
                return
            }
            let (closed, waiters) = state.withLock { state -> (Bool, [@Sendable () -> Void]) in
                // close() already took the queued chunks back.
                if state.closed { return (true, []) }
                state.queued.removeFirst()
                state.free.append(chunk.buffer)
                defer { state.bufferWaiters.removeAll() }
                return (false, state.bufferWaiters)
            }
            for waiter in waiters { waiter() }
            if closed {
                stopped(failure: nil)
                return
            }
        }
    }

    /// Ends a drain's execution: records a failure, wakes whoever waits for the queue to empty
    /// (and, after a failure, for buffers) and a pending ``close()``. Returns whether the writer
    /// is closed or failed.
    @discardableResult
    private func stopped(failure: (any Error)?, keepsDraining: Bool = false) -> Bool {
        let (over, closeWaiter, waiters) = state.withLock { state -> (Bool, CheckedContinuation<Void, Never>?, [@Sendable () -> Void]) in
            state.running = false
            if let failure, state.failure == nil { state.failure = failure }
            if !keepsDraining { state.draining = false }
            // Kept draining after a push back: the sink owes its `whenWritable` callback.
            if keepsDraining { state.awaitingWritable = true }
            let closeWaiter = state.closeWaiter
            state.closeWaiter = nil
            var waiters: [@Sendable () -> Void] = []
            if state.queued.isEmpty || state.failure != nil || state.closed {
                waiters = state.drainWaiters
                state.drainWaiters.removeAll()
            }
            if state.failure != nil {
                waiters += state.bufferWaiters
                state.bufferWaiters.removeAll()
            }
            return (state.closed || state.failure != nil, closeWaiter, waiters)
        }
        closeWaiter?.resume()
        for waiter in waiters { waiter() }
        return over
    }
}
