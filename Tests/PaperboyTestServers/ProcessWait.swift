import Foundation

extension Process {
    /// Waits for the process to exit by polling `isRunning`.
    ///
    /// `Process.waitUntilExit` was seen spinning forever on a thread without a run loop after
    /// the child had exited; polling does not depend on the run loop. Blocks the calling
    /// thread: call it from a test's own thread or a synchronous stop, not from the
    /// cooperative pool in a hot path.
    public func waitForExitPolling() {
        while isRunning { usleep(2_000) }
    }
}

/// Runs `body` on a thread of its own and returns its result. Starting a server waits for it
/// (processes to run, a port to answer); done on the cooperative pool, whose threads are as
/// few as the cores, that wait stalled every other test on a loaded machine.
public func offThePool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try body() }) }.start()
    }
}
