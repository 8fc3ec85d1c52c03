import Foundation
import Paperboy
import Synchronization

/// A ``TransferSink`` that takes bytes until it holds `limit` of them, then pushes back (as the
/// core's limiter does) and stays full until the test calls ``release()``.
///
/// A test stops a transfer at a known point whatever the machine's pace: the transport is
/// paused with at least `limit` and fewer than all bytes received, the test acts there (cancels),
/// and nothing the scheduler does meanwhile can let the transfer run to its end.
public final class HoldingSink: TransferSink, Sendable {
    private struct State {
        var data = Data()
        var response: TransferResponse?
        var held = false
        var released = false
        var resume: (@Sendable () -> Void)?
    }

    private let limit: Int
    private let state = Mutex(State())

    /// A sink that pushes back once it holds `limit` bytes.
    public init(holdingAfter limit: Int) { self.limit = limit }

    /// The bytes taken so far.
    public var data: Data { state.withLock { $0.data } }
    /// What `begin` reported.
    public var response: TransferResponse? { state.withLock { $0.response } }
    /// Whether the sink is full and the transport was told to pause.
    public var isHolding: Bool { state.withLock { $0.held && !$0.released } }

    /// Takes writes again and lets a paused transport go on.
    public func release() {
        let resume = state.withLock { state -> (@Sendable () -> Void)? in
            state.released = true
            defer { state.resume = nil }
            return state.resume
        }
        resume?()
    }

    public func begin(_ response: TransferResponse) throws { state.withLock { $0.response = response } }

    public func write(_ bytes: UnsafeRawBufferPointer) async throws { state.withLock { $0.data.append(contentsOf: bytes) } }

    public func tryWrite(_ bytes: UnsafeRawBufferPointer) throws -> Bool {
        state.withLock { state in
            if !state.released, state.data.count >= limit {
                state.held = true
                return false
            }
            state.data.append(contentsOf: bytes)
            return true
        }
    }

    public func whenWritable(_ callback: @escaping @Sendable () -> Void) {
        let now = state.withLock { state -> Bool in
            if state.released { return true }
            state.resume = callback
            return false
        }
        if now { callback() }
    }

    public func challenge(_ challenge: AuthChallenge) async -> AuthChallengeDisposition { .performDefaultHandling }
}
