import Foundation

/// Where Paperboy reads the time and waits.
///
/// Every decision taken at a time goes through one clock: retries and their backoff, the
/// no-progress timeout, the retries waiting in the store, the bandwidth limiter's refill,
/// child-process and helper timeouts, the notification throttle and feed schedules.
/// Production code uses ``SystemClock``; tests pass PaperboyTesting's `TestClock` and move
/// time by hand, so that each decision is asserted exactly and nothing sleeps to synchronise.
///
/// Rules for implementations:
/// 1. ``now`` and ``uptime`` move together and never backwards on a test clock; on the system
///    clock ``now`` follows the wall clock (it may jump) and ``uptime`` is monotonic.
/// 2. ``sleep(for:)`` returns once ``uptime`` has moved by at least `duration`, and throws
///    `CancellationError` as soon as the calling task is cancelled.
public protocol LibraryClock: Sendable {
    /// The wall-clock date: what is recorded in the store (a retry's date) and compared with
    /// dates read back from it.
    var now: Date { get }

    /// Monotonic time since an arbitrary origin of this clock: deadlines and intervals.
    var uptime: Duration { get }

    /// Suspends the calling task until `duration` has passed on this clock.
    ///
    /// - Throws: `CancellationError` when the task is cancelled first.
    func sleep(for duration: Duration) async throws
}

extension LibraryClock {
    /// Seconds of ``uptime``, for arithmetic in `Double`.
    public var uptimeSeconds: Double {
        let (seconds, attoseconds) = uptime.components
        return Double(seconds) + Double(attoseconds) / 1e18
    }

    /// Suspends for `seconds` (at least a microsecond's worth is slept; a negative value returns).
    public func sleep(seconds: Double) async throws {
        guard seconds > 0 else { return try Task.checkCancellation() }
        try await sleep(for: .microseconds(Int64(min(seconds, 86_400 * 365) * 1_000_000)))
    }
}

/// The real clocks: `Date()` for ``now``, `ContinuousClock` for ``uptime`` and sleeping.
public struct SystemClock: LibraryClock {
    private static let origin = ContinuousClock.now

    /// Creates the clock.
    public init() {}

    public var now: Date { Date() }

    public var uptime: Duration { ContinuousClock.now - Self.origin }

    public func sleep(for duration: Duration) async throws {
        try await Task.sleep(for: duration)
    }
}

extension LibraryClock where Self == SystemClock {
    /// The real clocks.
    public static var system: SystemClock { SystemClock() }
}
