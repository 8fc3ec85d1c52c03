import Foundation
import Paperboy
import Synchronization

/// A sink that pushes back as the core's bandwidth limiter does: every `every`-th `tryWrite` is
/// refused (at most `limit` times) and writing is allowed again after `pause`, from another
/// thread. A `tryWrite` while paused is a contract violation and throws.
public final class PushbackSink: TransferSink, @unchecked Sendable {
    /// How long each push-back lasts.
    public let pause: Duration
    /// Refuse every `every`-th write.
    public let every: Int
    /// Refuse at most this many times.
    public let limit: Int
    private let answer: @Sendable (AuthChallenge) -> AuthChallengeDisposition
    private let lock = Mutex<(data: Data, refusals: Int, calls: Int, pending: Bool, response: TransferResponse?)>((Data(), 0, 0, false, nil))

    /// Creates a sink.
    public init(pause: Duration = .milliseconds(5), every: Int = 2, limit: Int = .max,
                answer: @escaping @Sendable (AuthChallenge) -> AuthChallengeDisposition = { _ in .performDefaultHandling }) {
        self.pause = pause
        self.every = max(1, every)
        self.limit = limit
        self.answer = answer
    }

    /// The bytes accepted so far.
    public var data: Data { lock.withLock { $0.data } }
    /// How many writes were refused.
    public var refusals: Int { lock.withLock { $0.refusals } }
    /// What `begin` reported.
    public var response: TransferResponse? { lock.withLock { $0.response } }

    public func begin(_ response: TransferResponse) throws { lock.withLock { $0.response = response } }

    public func write(_ bytes: UnsafeRawBufferPointer) async throws { lock.withLock { $0.data.append(contentsOf: bytes) } }

    public func tryWrite(_ bytes: UnsafeRawBufferPointer) throws -> Bool {
        try lock.withLock { state in
            if state.pending { throw TransportError(.protocolError, "write while paused", isRetryable: false) }
            state.calls += 1
            if state.calls % every == 0, state.refusals < limit {
                state.refusals += 1
                state.pending = true
                return false
            }
            state.data.append(contentsOf: bytes)
            return true
        }
    }

    public func whenWritable(_ callback: @escaping @Sendable () -> Void) {
        runLater(after: pause) {
            self.lock.withLock { $0.pending = false }
            callback()
        }
    }

    public func challenge(_ challenge: AuthChallenge) async -> AuthChallengeDisposition { answer(challenge) }
}
