#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// Stops the test servers still running when the test process exits.
///
/// Servers are stopped by their owners (`stop()` or deinit), but a server whose owner is never
/// released, a test that ends in an unexpected way for instance, would outlive the test run
/// and keep its port and temporary folder. Every server registers its PID here, and an `atexit`
/// handler sends SIGTERM to those still registered.
public enum ServerReaper {
    private static let running = Mutex<Set<pid_t>>([])
    private static let installed: Bool = {
        atexit { ServerReaper.stop(ServerReaper.tracked) }
        return true
    }()

    /// Remembers a server process to stop at exit.
    public static func track(_ pid: pid_t) {
        _ = installed
        running.withLock { _ = $0.insert(pid) }
    }

    /// Forgets a server process its owner stopped.
    public static func untrack(_ pid: pid_t) {
        running.withLock { _ = $0.remove(pid) }
    }

    /// The server processes still registered.
    public static var tracked: Set<pid_t> { running.withLock { $0 } }

    /// Sends SIGTERM to `pids` (the `atexit` handler passes every tracked server).
    public static func stop(_ pids: Set<pid_t>) {
        for pid in pids { kill(pid, SIGTERM) }
    }
}
