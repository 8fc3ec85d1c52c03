#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import Synchronization

/// A bounded wait for a descriptor, for the blocking frame I/O of a dedicated thread: polls in
/// slices of at most 100 ms, so that an abandoned transfer is noticed promptly, until the
/// descriptor is ready or a deadline passed.
///
/// The deadline is kept by a task sleeping on the caller's clock (`sleep`), not by the poll's
/// own timeout: with the system clock the two are the same, and with a test clock the thread
/// blocked here ends exactly when the test moves time past the deadline, and the test sees the
/// wait as one sleeper of the full timeout. The task is started only when the descriptor is not
/// ready within the first 100 ms slice, so a flowing stream costs one `poll` per wait and no
/// task (a timeout of the system clock is thus up to 100 ms longer than asked: the timeouts
/// here are seconds).
public enum FrameWait {
    /// Waits until `fd` is ready for `events` (`POLLIN`, `POLLOUT`).
    ///
    /// - Parameters:
    ///   - timeout: how long to wait, on the clock behind `sleep`.
    ///   - sleep: suspends for a duration on the caller's clock (`clock.sleep(for:)`).
    ///   - abandoned: checked at least every 100 ms; when it returns `true`, the wait gives up.
    /// - Throws: ``FrameIOError/timedOut(_:)``, ``FrameIOError/abandoned``, or `.system` when `poll` fails.
    public static func untilReady(
        _ fd: Int32, events: Int16, timeout: Duration, sleep: @escaping @Sendable (Duration) async throws -> Void,
        abandoned: () -> Bool = { false }
    ) throws(FrameIOError) {
        if abandoned() { throw .abandoned }
        // A stream that flows is ready within a slice: no task for it.
        if try isReady(fd, events, milliseconds: 100) { return }
        if abandoned() { throw .abandoned }
        let deadline = Deadline(after: timeout, sleep: sleep)
        defer { deadline.cancel() }
        while true {
            if abandoned() { throw .abandoned }
            if deadline.hasPassed { throw .timedOut(timeout) }
            if try isReady(fd, events, milliseconds: 100) { return }
        }
    }

    /// Whether `fd` became ready within `milliseconds`.
    private static func isReady(_ fd: Int32, _ events: Int16, milliseconds: Int32) throws(FrameIOError) -> Bool {
        var descriptor = pollfd(fd: fd, events: events, revents: 0)
        let ready = poll(&descriptor, 1, milliseconds)
        if ready < 0, errno != EINTR { throw .system("poll: \(String(cString: strerror(errno)))") }
        return ready > 0
    }

    /// A flag set by a task once it slept `duration`; cancelling it ends the task.
    private final class Deadline: Sendable {
        private let passed = Atomic<Bool>(false)
        private let timer = Mutex<Task<Void, Never>?>(nil)

        init(after duration: Duration, sleep: @escaping @Sendable (Duration) async throws -> Void) {
            let task = Task { [weak self] in
                guard (try? await sleep(duration)) != nil else { return }
                self?.passed.store(true, ordering: .releasing)
            }
            timer.withLock { $0 = task }
        }

        var hasPassed: Bool { passed.load(ordering: .acquiring) }

        func cancel() { timer.withLock { $0?.cancel() } }
    }
}
