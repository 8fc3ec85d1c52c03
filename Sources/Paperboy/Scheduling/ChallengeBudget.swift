import Foundation
import Synchronization

/// Bounds the challenges one transfer attempt may raise, so that a server, a proxy or a helper
/// that keeps asking cannot make the core answer (or the app's delegate be asked) forever.
///
/// A real exchange needs a few challenges: a host key, then a password or a key and its
/// passphrase, a few keyboard-interactive rounds, a proxy and then the origin, a Digest nonce
/// gone stale. ``limit`` leaves room for all of them at once. Past it, the challenge is answered
/// `.cancelAuthenticationChallenge` without asking anyone, the attempt's task is cancelled (a
/// transport that ignores the answer is stopped too), and the attempt fails with a
/// non-retryable `authentication-failed` error naming the URL and the count.
final class ChallengeBudget: Sendable {
    /// The most challenges answered in one attempt.
    static let limit = 16

    private struct State {
        var count = 0
        var exhausted = false
        var attempt: Task<Void, any Error>?
    }

    private let url: URL
    private let state = Mutex<State>(State())

    /// A budget for one attempt at `url`.
    init(url: URL) { self.url = url }

    /// Counts one challenge: `true` if it may be answered; `false` once more than ``limit`` were
    /// raised, and the attempt is then cancelled.
    func admit() -> Bool {
        let (admitted, attempt) = state.withLock { state -> (Bool, Task<Void, any Error>?) in
            state.count += 1
            guard state.count > Self.limit else { return (true, nil) }
            state.exhausted = true
            return (false, state.attempt)
        }
        attempt?.cancel()
        return admitted
    }

    /// Runs one attempt (`body`) in a task of its own, so that running out of challenges can stop
    /// it; cancelling the caller cancels it too.
    ///
    /// - Throws: the `authentication-failed` error once the budget ran out, else what `body` throws.
    func run(_ body: @escaping @Sendable () async throws -> Void) async throws {
        let attempt = Task { try await body() }
        let exhausted = state.withLock { state in
            state.attempt = attempt
            return state.exhausted
        }
        if exhausted { attempt.cancel() }
        do {
            try await withTaskCancellationHandler {
                try await attempt.value
            } onCancel: {
                attempt.cancel()
            }
        } catch {
            if state.withLock({ $0.exhausted }) { throw exhaustedError() }
            throw error
        }
    }

    private func exhaustedError() -> TransportError {
        TransportError(
            .authenticationFailed,
            "\(url.redactedString) raised more than \(Self.limit) authentication challenges in one attempt; "
                + "gave up instead of answering again (check the credentials, or the server or helper that keeps asking)",
            url: url, isRetryable: false)
    }
}
