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
