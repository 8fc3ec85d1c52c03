import CPaperboySystem
import Dispatch
import Foundation
import Synchronization

/// A dedicated thread that runs blocking closures one at a time, so that blocking reads and
/// writes on a helper's pipes never occupy Swift's cooperative thread pool.
final class WorkerThread: Sendable {
    private struct State {
        var jobs: [@Sendable () -> Void] = []
        var stopped = false
    }

    private let state = Mutex<State>(State())
    private let wakeUp = DispatchSemaphore(value: 0)

    /// Starts the thread.
    ///
    /// - Parameter blocksSIGPIPE: block SIGPIPE on this thread, so that writing to a helper that
    ///   exited fails with `EPIPE` instead of killing the process.
    init(name: String, blocksSIGPIPE: Bool = false, stackSize: Int = 512 * 1024) {
        let thread = Thread { [self] in
            if blocksSIGPIPE { paperboy_block_sigpipe() }
            while true {
                wakeUp.wait()
                let (job, stopped) = state.withLock { state -> ((@Sendable () -> Void)?, Bool) in
                    (state.jobs.isEmpty ? nil : state.jobs.removeFirst(), state.stopped && state.jobs.isEmpty)
                }
                job?()
                if job == nil, stopped { return }
            }
        }
        thread.name = name
        thread.stackSize = stackSize
        thread.start()
    }

    /// Runs `body` on the thread and returns its result.
    ///
    /// - Throws: what `body` throws, or ``WorkerThreadStopped`` after ``stop()``.
    func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            let accepted = enqueue { continuation.resume(with: Result { try body() }) }
            if !accepted { continuation.resume(throwing: WorkerThreadStopped()) }
        }
    }

    /// Queues `job` without waiting for it; returns `false` when the thread was stopped.
    @discardableResult
    func enqueue(_ job: @escaping @Sendable () -> Void) -> Bool {
        let accepted = state.withLock { state -> Bool in
            guard !state.stopped else { return false }
            state.jobs.append(job)
            return true
        }
        if accepted { wakeUp.signal() }
        return accepted
    }

    /// Lets the queued jobs run, then ends the thread.
    func stop() {
        let first = state.withLock { state -> Bool in
            defer { state.stopped = true }
            return !state.stopped
        }
        if first { wakeUp.signal() }
    }
}

/// Thrown when work is offered to a stopped ``WorkerThread``.
struct WorkerThreadStopped: Error {}
