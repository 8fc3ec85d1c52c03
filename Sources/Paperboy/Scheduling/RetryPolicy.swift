import Foundation

/// How many times a retryable failure is tried again, and how long to wait in between.
///
/// Only attempts without progress count: an attempt that advanced the durable offset (the bytes
/// recorded on disk, from which the next attempt resumes) starts the count, and the backoff,
/// afresh. So a link that drops every few megabytes never exhausts the retries while each
/// attempt gets further, and a source that gets nowhere fails after ``maxAttempts``.
public struct RetryPolicy: Sendable, Hashable {
    /// Consecutive attempts without progress before an asset fails (at least 1): 1 means
    /// "never retry an attempt that got nowhere".
    public var maxAttempts: Int
    /// Delay before the second attempt; doubles for each later one without progress.
    public var baseDelay: Duration
    /// The longest delay between two attempts (a server's Retry-After may ask for more, up to an hour).
    public var maxDelay: Duration
    /// How long an asset may go without progress before it fails even with attempts left;
    /// `nil` (the default) sets no limit.
    ///
    /// The clock starts with the first attempt and restarts at each attempt that made progress,
    /// and when the asset is paused, waits for an allowed network or is taken up again after
    /// the library is reopened. It is checked when an attempt fails: an asset whose next retry
    /// would start past the limit fails then.
    public var noProgressTimeout: Duration?

    /// Creates a policy. The defaults: 5 attempts without progress, 1 s doubling up to 5 minutes,
    /// no overall limit.
    public init(maxAttempts: Int = 5, baseDelay: Duration = .seconds(1), maxDelay: Duration = .seconds(300),
                noProgressTimeout: Duration? = nil) {
        self.maxAttempts = max(1, maxAttempts)
        self.baseDelay = baseDelay
        self.maxDelay = maxDelay
        self.noProgressTimeout = noProgressTimeout
    }

    /// The delay before attempt `attempt + 1` after `attempt` failed ones, with "equal jitter":
    /// half the exponential delay plus a random part of the other half.
    public func delay(afterFailedAttempts attempt: Int, retryAfter: Duration? = nil,
                      random: (ClosedRange<Double>) -> Double = { Double.random(in: $0) }) -> Duration {
        let exponent = min(max(attempt - 1, 0), 30)
        let base = baseDelay.seconds * pow(2, Double(exponent))
        let capped = min(base, maxDelay.seconds)
        var seconds = capped / 2 + random(0...1) * capped / 2
        if let retryAfter { seconds = max(seconds, min(retryAfter.seconds, 3600)) }
        return .milliseconds(Int64((seconds * 1000).rounded()))
    }

    /// What follows a failed attempt: another one after a delay, or none.
    enum Decision: Sendable, Equatable {
        case retry(after: Duration)
        /// `reason`: why a failure that a retry could help is given up (`nil` when it could not).
        case giveUp(reason: String?)
    }

    /// Decides whether to try again after `attempts` failed attempts without progress, the
    /// last one ending in a failure that is `isRetryable` (or not), when the asset has gone
    /// `stalled` without progress; `random` is the backoff's random part, in 0...1.
    func decision(afterFailedAttempts attempts: Int, isRetryable: Bool, retryAfter: Duration?,
                  withoutProgressFor stalled: Duration, random: Double) -> Decision {
        let delay = delay(afterFailedAttempts: attempts, retryAfter: retryAfter, random: { _ in random })
        let outOfTime = noProgressTimeout.map { stalled + delay > $0 } ?? false
        if isRetryable && attempts < maxAttempts && !outOfTime { return .retry(after: delay) }
        guard isRetryable else { return .giveUp(reason: nil) }
        return .giveUp(reason: outOfTime
            ? "gave up: no progress within the \(String(format: "%g", noProgressTimeout?.seconds ?? 0)) s no-progress timeout"
            : "gave up after \(attempts) attempts without progress")
    }
}

extension Duration {
    /// This duration in seconds, as a `Double`.
    var seconds: Double {
        let (whole, attoseconds) = components
        return Double(whole) + Double(attoseconds) / 1e18
    }
}
