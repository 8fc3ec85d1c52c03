import Foundation

/// How many times a retryable failure is tried again, and how long to wait in between.
public struct RetryPolicy: Sendable, Hashable {
    /// Total attempts, the first one included (at least 1).
    public var maxAttempts: Int
    /// Delay before the second attempt; doubles for each later one.
    public var baseDelay: Duration
    /// The longest delay between two attempts (a server's Retry-After may ask for more, up to an hour).
    public var maxDelay: Duration

    /// Creates a policy. The defaults: 5 attempts, 1 s doubling up to 5 minutes.
    public init(maxAttempts: Int = 5, baseDelay: Duration = .seconds(1), maxDelay: Duration = .seconds(300)) {
        self.maxAttempts = max(1, maxAttempts)
        self.baseDelay = baseDelay
        self.maxDelay = maxDelay
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
}

extension Duration {
    /// This duration in seconds, as a `Double`.
    var seconds: Double {
        let (whole, attoseconds) = components
        return Double(whole) + Double(attoseconds) / 1e18
    }
}
