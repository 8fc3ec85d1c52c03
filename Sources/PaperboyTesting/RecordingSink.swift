import Foundation
import Paperboy
import Synchronization

/// A ``TransferSink`` that keeps the bytes in memory and records what a transport did, for
/// testing a transport on its own (the core's sink writes files instead).
public final class RecordingSink: TransferSink {
    private struct State {
        var response: TransferResponse?
        var beginCount = 0
        var data = Data()
        var writes = 0
        var challenges: [AuthChallenge] = []
    }

    private let state = Mutex<State>(State())
    private let startOffset: Int64
    private let writeDelay: Duration?
    private let restartOnValidatorChange: ResourceValidator?
    private let answer: @Sendable (AuthChallenge) -> AuthChallengeDisposition

    /// Creates a sink.
    ///
    /// - Parameters:
    ///   - startOffset: the offset the job asked for (bytes before it are not recorded).
    ///   - writeDelay: time each `write` suspends, to exercise back-pressure.
    ///   - expectedValidator: if set and the transport reports another validator at a non-zero
    ///     offset, `begin` throws ``TransferRestart`` as the core does.
    ///   - answer: how challenges are answered.
    public init(
        startOffset: Int64 = 0, writeDelay: Duration? = nil, expectedValidator: ResourceValidator? = nil,
        answer: @escaping @Sendable (AuthChallenge) -> AuthChallengeDisposition = { _ in .performDefaultHandling }
    ) {
        self.startOffset = startOffset
        self.writeDelay = writeDelay
        restartOnValidatorChange = expectedValidator
        self.answer = answer
    }

    /// What `begin` reported, if it was called.
    public var response: TransferResponse? { state.withLock { $0.response } }
    /// How many times `begin` was called (the contract says once).
    public var beginCount: Int { state.withLock { $0.beginCount } }
    /// The bytes written after the honoured offset.
    public var data: Data { state.withLock { $0.data } }
    /// How many `write` calls arrived.
    public var writeCount: Int { state.withLock { $0.writes } }
    /// The challenges raised.
    public var challenges: [AuthChallenge] { state.withLock { $0.challenges } }

    public func begin(_ response: TransferResponse) throws {
        if response.offset != 0, let expected = restartOnValidatorChange, expected != response.validator {
            throw TransferRestart(reason: "validator changed")
        }
        state.withLock {
            $0.beginCount += 1
            $0.response = response
        }
    }

    public func write(_ bytes: UnsafeRawBufferPointer) async throws {
        if let writeDelay { try await Task.sleep(for: writeDelay) }
        _ = try tryWrite(bytes)
    }

    public func tryWrite(_ bytes: UnsafeRawBufferPointer) throws -> Bool {
        try state.withLock { state in
            guard state.beginCount > 0 else {
                throw TransportError(.protocolError, "write before begin", isRetryable: false)
            }
            state.data.append(contentsOf: bytes)
            state.writes += 1
        }
        return true
    }

    public func whenWritable(_ callback: @escaping @Sendable () -> Void) { callback() }

    public func challenge(_ challenge: AuthChallenge) async -> AuthChallengeDisposition {
        state.withLock { $0.challenges.append(challenge) }
        return answer(challenge)
    }
}
