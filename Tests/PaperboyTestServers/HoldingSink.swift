import Foundation
import Paperboy
import Synchronization

/// A ``TransferSink`` that takes bytes until it holds `limit` of them, then pushes back (as the
/// core's limiter does) and stays full until the test calls ``release()``.
///
/// A test stops a transfer at a known point whatever the machine's pace: the transport is
/// paused with at least `limit` and fewer than all bytes received, the test acts there (cancels),
/// and nothing the scheduler does meanwhile can let the transfer run to its end. When the
/// library must own the sink, ``HoldingTransport`` holds a transfer the same way.
public final class HoldingSink: TransferSink, Sendable {
    private struct State {
        var data = Data()
        var response: TransferResponse?
    }

    private let hold: Hold
    private let state = Mutex(State())
    private let answer: @Sendable (AuthChallenge) -> AuthChallengeDisposition

    /// A sink that pushes back once it holds `limit` bytes; `answer` answers challenges.
    public init(holdingAfter limit: Int,
                answer: @escaping @Sendable (AuthChallenge) -> AuthChallengeDisposition = { _ in .performDefaultHandling }) {
        hold = Hold(after: limit)
        self.answer = answer
    }

    /// The bytes taken so far.
    public var data: Data { state.withLock { $0.data } }
    /// What `begin` reported.
    public var response: TransferResponse? { state.withLock { $0.response } }
    /// Whether the sink is full and the transport was told to pause.
    public var isHolding: Bool { hold.isHolding }

    /// Takes writes again and lets a paused transport go on.
    public func release() { hold.release() }

    public func begin(_ response: TransferResponse) throws { state.withLock { $0.response = response } }

    public func write(_ bytes: UnsafeRawBufferPointer) async throws {
        if !hold.mayTake() { try await hold.released() }
        take(bytes)
    }

    public func tryWrite(_ bytes: UnsafeRawBufferPointer) throws -> Bool {
        guard hold.mayTake() else { return false }
        take(bytes)
        return true
    }

    public func whenWritable(_ callback: @escaping @Sendable () -> Void) { hold.whenReleased(callback) }

    public func challenge(_ challenge: AuthChallenge) async -> AuthChallengeDisposition { answer(challenge) }

    private func take(_ bytes: UnsafeRawBufferPointer) {
        state.withLock { $0.data.append(contentsOf: bytes) }
        hold.took(bytes.count)
    }
}
