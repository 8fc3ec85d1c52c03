import Foundation

/// How long a caller that waits for its downloads to settle waits for a retry: a retry due later
/// than ``maxWait`` from now ends the wait for its asset, which goes on waiting in the library.
///
/// A one-shot command (`paperboy sync`) cannot sit for the hour a server's `Retry-After` (or a
/// helper's `retry_after`) may ask; a process that stays (the daemon, an app) waits without one.
/// The one rule every waiter asks: ``Library/waitUntilIdle(includingNetworkWaits:retryWaitLimit:)``
/// for a library in this process, and whoever follows assets' states from elsewhere (through a
/// daemon) with ``retryEndingWait(_:now:)``.
public struct RetryWaitLimit: Sendable, Equatable {
    /// The longest time until a retry that is still waited for.
    public var maxWait: Duration

    public init(maxWait: Duration) {
        self.maxWait = maxWait
    }

    /// Whether a retry due at `due` ends the wait, seen at `now`: it is due more than
    /// ``maxWait`` later.
    public func endsWait(retryDueAt due: Date, now: Date) -> Bool {
        due.timeIntervalSince(now) > maxWait.seconds
    }

    /// When the retry `state` waits for is due, if that ends the wait (`nil` for every other state).
    public func retryEndingWait(_ state: AssetState, now: Date) -> Date? {
        guard case .waiting(.retry(let until, _)) = state, endsWait(retryDueAt: until, now: now) else { return nil }
        return until
    }
}
