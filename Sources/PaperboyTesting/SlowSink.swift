import Foundation
import Paperboy
import Synchronization

/// A ``TransferSink`` that takes every write, each after `delay` (a slow disk), and keeps the
/// bytes in memory: for tests of what a transport's write-behind does with the bytes it holds.
public final class SlowSink: TransferSink, Sendable {
    private let delay: useconds_t
    private let answer: @Sendable (AuthChallenge) -> AuthChallengeDisposition
    private let state = Mutex<(data: Data, calls: Int)>((Data(), 0))

    /// Creates a sink whose writes each take `delay` microseconds; `answer` answers challenges.
    public init(
        delay: useconds_t,
        answer: @escaping @Sendable (AuthChallenge) -> AuthChallengeDisposition = { _ in .performDefaultHandling }
    ) {
        self.delay = delay
        self.answer = answer
    }

    /// The bytes taken so far.
    public var data: Data { state.withLock { $0.data } }
    /// Writes started so far.
    public var calls: Int { state.withLock { $0.calls } }

    public func begin(_ response: TransferResponse) throws {}
    public func write(_ bytes: UnsafeRawBufferPointer) async throws { _ = tryWrite(bytes) }
    public func tryWrite(_ bytes: UnsafeRawBufferPointer) -> Bool {
        state.withLock { $0.calls += 1 }
        usleep(delay)
        state.withLock { $0.data.append(contentsOf: bytes) }
        return true
    }
    public func whenWritable(_ callback: @escaping @Sendable () -> Void) { callback() }
    public func challenge(_ challenge: AuthChallenge) async -> AuthChallengeDisposition { answer(challenge) }
}
