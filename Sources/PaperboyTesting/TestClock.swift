import Foundation
import Paperboy
import Synchronization

/// A ``LibraryClock`` that moves only when a test says so.
///
/// Pass it where Paperboy takes a clock (`Library.Configuration.clock`, a limiter, a child
/// run); the code under test sleeps on it; the test waits until the sleep has started
/// (``waitForSleepers(_:timeout:)``), moves time (``advance(by:)``), and asserts the decision
/// taken at that exact time. Nothing in the test sleeps.
///
/// ```swift
/// let clock = TestClock()
/// configuration.clock = clock
/// // … an attempt fails, a retry is timed for 100 ms from now:
/// try await clock.waitForSleepers(1)
/// clock.advance(by: .milliseconds(99))   // not yet
/// clock.advance(by: .milliseconds(1))    // the retry starts
/// ```
///
/// ``advance(by:)`` resumes every sleeper due at the new time, earliest first; a sleep started
/// after the call (even by a task it resumed) waits for the next advance.
public final class TestClock: LibraryClock, Sendable {
    private struct Sleeper {
        var deadline: Duration
        /// How long the task asked to sleep.
        var duration: Duration
        var continuation: CheckedContinuation<Void, any Error>
    }

    private struct Waiter {
        var count: Int
        var continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var uptime: Duration = .zero
        var sleepers: [Int: Sleeper] = [:]
        var cancelled: Set<Int> = []
        var waiters: [Int: Waiter] = [:]
        var nextID = 0

        mutating func takeSatisfiedWaiters() -> [CheckedContinuation<Void, any Error>] {
            let satisfied = waiters.filter { $0.value.count <= sleepers.count }
            for id in satisfied.keys { waiters[id] = nil }
            return satisfied.map(\.value.continuation)
        }
    }

    private let start: Date
    private let state = Mutex(State())

    /// A clock whose ``now`` starts at `start` (by default a fixed date, so that runs repeat).
    public init(start: Date = Date(timeIntervalSince1970: 1_800_000_000)) {
        self.start = start
    }

    public var now: Date {
        start.addingTimeInterval(Self.seconds(uptime))
    }

    public var uptime: Duration {
        state.withLock { $0.uptime }
    }

    public func sleep(for duration: Duration) async throws {
        guard duration > .zero else { return try Task.checkCancellation() }
        let id = state.withLock { state in
            state.nextID += 1
            return state.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let (cancelled, waiters) = state.withLock { state -> (Bool, [CheckedContinuation<Void, any Error>]) in
                    if state.cancelled.remove(id) != nil { return (true, []) }
                    state.sleepers[id] = Sleeper(deadline: state.uptime + duration, duration: duration, continuation: continuation)
                    return (false, state.takeSatisfiedWaiters())
                }
                if cancelled { continuation.resume(throwing: CancellationError()) }
                for waiter in waiters { waiter.resume() }
            }
        } onCancel: {
            let sleeper = state.withLock { state in
                guard let sleeper = state.sleepers.removeValue(forKey: id) else {
                    // Not registered yet (or already resumed): registering sees this and throws.
                    state.cancelled.insert(id)
                    return nil as Sleeper?
                }
                return sleeper
            }
            sleeper?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Moves time forward by `duration` and resumes every sleeper due by then, earliest first.
    public func advance(by duration: Duration) {
        precondition(duration >= .zero, "a TestClock never moves backwards")
        let due = state.withLock { state -> [Sleeper] in
            state.uptime += duration
            let due = state.sleepers.filter { $0.value.deadline <= state.uptime }
                .sorted { ($0.value.deadline, $0.key) < ($1.value.deadline, $1.key) }
            for (id, _) in due { state.sleepers[id] = nil }
            // Ids of sleeps that ended are never cancelled later: forget those kept for a race.
            if state.sleepers.isEmpty { state.cancelled = [] }
            return due.map(\.value)
        }
        for sleeper in due { sleeper.continuation.resume() }
    }

    /// Moves time to the earliest sleeper's deadline and resumes it (and any due with it);
    /// returns how far time moved, or `nil` if nothing sleeps.
    @discardableResult
    public func advanceToNextDeadline() -> Duration? {
        guard let next = nextDeadline else { return nil }
        let step = max(.zero, next - uptime)
        advance(by: step)
        return step
    }

    /// How many tasks are sleeping on this clock.
    public var sleeperCount: Int {
        state.withLock { $0.sleepers.count }
    }

    /// The earliest deadline (in ``uptime``) a task sleeps until, if any.
    public var nextDeadline: Duration? {
        state.withLock { $0.sleepers.values.map(\.deadline).min() }
    }

    /// The time left until each sleeper's deadline, soonest first.
    public var pendingSleeps: [Duration] {
        state.withLock { state in state.sleepers.values.map { $0.deadline - state.uptime }.sorted() }
    }

    /// Waits until at least `count` tasks sleep on this clock; the only real-time wait here, a
    /// deadline for a test that would otherwise hang (a ``WaitBudget``: a starved process does
    /// not use it up).
    ///
    /// - Throws: ``TimedOut`` naming how many sleepers were seen when `timeout` passed, or
    ///   `CancellationError`.
    public func waitForSleepers(_ count: Int = 1, timeout: Duration = .seconds(60)) async throws {
        let id = state.withLock { state in
            state.nextID += 1
            return state.nextID
        }
        let timer = Task { [weak self] in
            try? await WaitBudget.spend(timeout)
            self?.expireWaiter(id, count: count, timeout: timeout)
        }
        defer { timer.cancel() }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let ready = state.withLock { state -> Bool in
                    if state.sleepers.count >= count { return true }
                    state.waiters[id] = Waiter(count: count, continuation: continuation)
                    return false
                }
                if ready { continuation.resume() }
            }
        } onCancel: {
            state.withLock { $0.waiters.removeValue(forKey: id) }?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Waits until a task sleeps for exactly `duration` from the current time (a sleep started
    /// since the clock last moved), and returns how many such sleeps there are.
    ///
    /// A test that knows the decision to come (a retry timed 100 ms from now) waits for it so,
    /// whatever else sleeps on the clock meanwhile (the library's statistics recorder).
    ///
    /// - Throws: ``TimedOut`` naming the sleeps seen when `timeout` passed, or `CancellationError`.
    @discardableResult
    public func waitForSleep(of duration: Duration, timeout: Duration = .seconds(60)) async throws -> Int {
        var count = 0
        try await eventually("a sleep of \(duration) on the test clock", timeout: timeout, seen: "sleeps with \(self.pendingSleeps) left") {
            count = self.freshSleeps(of: duration)
            return count > 0
        }
        return count
    }

    /// Sleeps of exactly `duration` started at the current time.
    public func freshSleeps(of duration: Duration) -> Int {
        state.withLock { state in
            state.sleepers.values.filter { $0.duration == duration && $0.deadline - state.uptime == duration }.count
        }
    }

    private func expireWaiter(_ id: Int, count: Int, timeout: Duration) {
        let (waiter, seen) = state.withLock { state in
            (state.waiters.removeValue(forKey: id), state.sleepers.values.map { $0.deadline - state.uptime }.sorted())
        }
        waiter?.continuation.resume(throwing: TimedOut(
            "waited \(timeout) for \(count) sleeper(s) on the test clock; saw \(seen.count) (due in \(seen))"))
    }

    private static func seconds(_ duration: Duration) -> Double {
        let (seconds, attoseconds) = duration.components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
