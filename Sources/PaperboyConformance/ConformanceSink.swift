import Foundation
import Paperboy
import PaperboyTesting
import Synchronization

/// An instrumented ``TransferSink`` that records how a transport used it: begin calls, every
/// write's size, overlapping calls, writes after the transfer ended, challenges.
///
/// It can push back like the core does: slow `write` calls (a delay that ignores task
/// cancellation, as the core's disk and limiter do) and `tryWrite` refusing every other chunk
/// until the callback given to `whenWritable` has run.
public final class ConformanceSink: TransferSink {
    /// How the sink pushes back.
    public struct Behaviour: Sendable {
        /// Time each `write` (and each refused `tryWrite`) holds the transport back.
        public var delay: Duration?
        /// Whether `tryWrite` refuses every other chunk.
        public var refusesTryWrites: Bool
        /// The offset the job asked for: a `begin` at another non-zero offset is a contract breach.
        public var requestedOffset: Int64
        /// Validator recorded for the bytes before `requestedOffset`: a resume reporting another
        /// one makes `begin` throw ``TransferRestart``, as the core does.
        public var recordedValidator: ResourceValidator?
        /// How challenges are answered.
        public var answer: @Sendable (AuthChallenge) -> AuthChallengeDisposition

        /// Creates a behaviour; the defaults accept everything at once.
        public init(
            delay: Duration? = nil, refusesTryWrites: Bool = false, requestedOffset: Int64 = 0,
            recordedValidator: ResourceValidator? = nil,
            answer: @escaping @Sendable (AuthChallenge) -> AuthChallengeDisposition = { _ in .performDefaultHandling }
        ) {
            self.delay = delay
            self.refusesTryWrites = refusesTryWrites
            self.requestedOffset = requestedOffset
            self.recordedValidator = recordedValidator
            self.answer = answer
        }
    }

    private struct State {
        var response: TransferResponse?
        var beginCount = 0
        var data = Data()
        var writeSizes: [Int] = []
        var inFlight = 0
        var overlapped = false
        var writesBeforeBegin = 0
        var writesAfterEnd = 0
        var ended = false
        var challenges: [AuthChallenge] = []
        var restarted = false
        var refuseNext = false
        var blocked = false
        var refusals = 0
        var pendingWritable: [@Sendable () -> Void] = []
    }

    private let state = Mutex<State>(State())
    private let behaviour: Behaviour

    /// Creates a sink.
    public init(_ behaviour: Behaviour = Behaviour()) {
        self.behaviour = behaviour
    }

    /// What `begin` reported last.
    public var response: TransferResponse? { state.withLock { $0.response } }
    /// How many times `begin` was called.
    public var beginCount: Int { state.withLock { $0.beginCount } }
    /// The bytes accepted after the honoured offset.
    public var data: Data { state.withLock { $0.data } }
    /// The size of every accepted chunk, in order.
    public var writeSizes: [Int] { state.withLock { $0.writeSizes } }
    /// Whether two calls ever overlapped (the contract forbids it).
    public var overlapped: Bool { state.withLock { $0.overlapped } }
    /// Chunks offered before `begin`.
    public var writesBeforeBegin: Int { state.withLock { $0.writesBeforeBegin } }
    /// Chunks offered after ``markEnded()``.
    public var writesAfterEnd: Int { state.withLock { $0.writesAfterEnd } }
    /// Every challenge raised.
    public var challenges: [AuthChallenge] { state.withLock { $0.challenges } }
    /// Whether `begin` threw ``TransferRestart``.
    public var threwRestart: Bool { state.withLock { $0.restarted } }
    /// How many `tryWrite` calls were refused.
    public var refusals: Int { state.withLock { $0.refusals } }

    /// Records that the transfer call returned: any later call is a contract breach.
    public func markEnded() { state.withLock { $0.ended = true } }

    public func begin(_ response: TransferResponse) throws {
        let restart = state.withLock { state -> Bool in
            state.beginCount += 1
            state.response = response
            if state.ended { state.writesAfterEnd += 1 }
            if response.offset != 0, let recorded = behaviour.recordedValidator, recorded != response.validator {
                state.restarted = true
                return true
            }
            return false
        }
        if restart { throw TransferRestart(reason: "validator changed (conformance sink)") }
    }

    public func write(_ bytes: UnsafeRawBufferPointer) async throws {
        enter()
        if let delay = behaviour.delay { await Self.sleepIgnoringCancellation(delay) }
        accept(bytes)
        leave()
    }

    public func tryWrite(_ bytes: UnsafeRawBufferPointer) throws -> Bool {
        enter()
        defer { leave() }
        let refuse = state.withLock { state -> Bool in
            if state.blocked {
                state.refusals += 1
                return true
            }
            guard behaviour.refusesTryWrites else { return false }
            state.refuseNext.toggle()
            if state.refuseNext {
                state.blocked = true
                state.refusals += 1
            }
            return state.refuseNext
        }
        if refuse { return false }
        accept(bytes)
        return true
    }

    public func whenWritable(_ callback: @escaping @Sendable () -> Void) {
        let blocked = state.withLock { state -> Bool in
            if state.blocked { state.pendingWritable.append(callback) }
            return state.blocked
        }
        guard blocked else { return callback() }
        let delay = behaviour.delay ?? .milliseconds(1)
        runLater(after: delay) { [self] in
            let callbacks = state.withLock { state -> [@Sendable () -> Void] in
                state.blocked = false
                defer { state.pendingWritable = [] }
                return state.pendingWritable
            }
            for callback in callbacks { callback() }
        }
    }

    public func challenge(_ challenge: AuthChallenge) async -> AuthChallengeDisposition {
        state.withLock { $0.challenges.append(challenge) }
        return behaviour.answer(challenge)
    }

    private func enter() {
        state.withLock { state in
            state.inFlight += 1
            if state.inFlight > 1 { state.overlapped = true }
            if state.beginCount == 0 { state.writesBeforeBegin += 1 }
            if state.ended { state.writesAfterEnd += 1 }
        }
    }

    private func leave() { state.withLock { $0.inFlight -= 1 } }

    private func accept(_ bytes: UnsafeRawBufferPointer) {
        state.withLock { state in
            state.data.append(contentsOf: bytes)
            state.writeSizes.append(bytes.count)
        }
    }

    /// Sleeps like a slow disk: task cancellation does not cut it short.
    static func sleepIgnoringCancellation(_ duration: Duration) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            runLater(after: duration) { continuation.resume() }
        }
    }
}
