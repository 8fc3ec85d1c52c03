import Foundation
import Paperboy
import PaperboyTesting
import Synchronization

/// An instrumented ``TransferSink`` that records how a transport used it: begin calls, every
/// write's size, overlapping calls, writes after the transfer ended, challenges, and segments
/// (``Behaviour/acceptsSegments``) with every breach of their rules.
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
        /// Whether ``segment(_:)`` hands out segments (as the core's sink does) rather than `nil`.
        public var acceptsSegments = false
        /// With segments accepted: sequential bytes after which writes wait until a segment is
        /// asked for, or ``segmentWait`` passes, so that a transport's other connections get to
        /// answer before the first one has fetched everything (`nil`: never wait).
        public var holdsForSegmentsAfter: Int64?
        /// The longest such wait, counted as a `WaitBudget` (time the process was not scheduled
        /// does not count).
        public var segmentWait: Duration = .seconds(5)

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
        var segments: [SegmentRecord] = []
        /// The core's own bookkeeping of segments, whose rules the transport must keep.
        var ledger = SegmentLedger()
        var segmentBreaches: [String] = []
        /// Whether sequential writes wait for a segment: `nil` before the wait began.
        var holding: Bool?
        var holdWaiters: [@Sendable () -> Void] = []
    }

    /// One segment handed out: its range and the bytes it accepted.
    public struct SegmentRecord: Sendable {
        public var range: Range<Int64>
        public var data = Data()
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

    /// Every segment handed out, in the order asked for, with its bytes.
    public var segments: [SegmentRecord] { state.withLock { $0.segments } }
    /// Segment rules broken (a bad range, bytes past a segment or past a segment's start); each
    /// also made the call throw `.protocolError`, as the core's sink does.
    public var segmentBreaches: [String] { state.withLock { $0.segmentBreaches } }

    /// The resource as written: the sequential bytes from the honoured offset, with every
    /// segment's bytes at their place (zeros where nothing was written); `nil` before `begin`.
    public var assembled: Data? {
        state.withLock { state -> Data? in
            guard let response = state.response else { return nil }
            let offset = Int(response.offset)
            let end = state.segments.map { Int($0.range.upperBound) }.max() ?? 0
            var whole = Data(count: max(offset + state.data.count, end))
            whole.replaceSubrange(offset..<(offset + state.data.count), with: state.data)
            for segment in state.segments where !segment.data.isEmpty {
                let start = Int(segment.range.lowerBound)
                whole.replaceSubrange(start..<(start + segment.data.count), with: segment.data)
            }
            return whole.suffix(from: offset)
        }
    }

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
        defer { leave() }
        if holds(bytes.count) {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                whenHoldEnds { continuation.resume() }
            }
        }
        if let delay = behaviour.delay { await Self.sleepIgnoringCancellation(delay) }
        try accept(bytes)
    }

    public func tryWrite(_ bytes: UnsafeRawBufferPointer) throws -> Bool {
        enter()
        defer { leave() }
        if holds(bytes.count) { return false }
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
        try accept(bytes)
        return true
    }

    public func whenWritable(_ callback: @escaping @Sendable () -> Void) {
        if state.withLock({ $0.holding == true }) { return whenHoldEnds(callback) }
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

    fileprivate func enter() {
        state.withLock { state in
            state.inFlight += 1
            if state.inFlight > 1 { state.overlapped = true }
            if state.beginCount == 0 { state.writesBeforeBegin += 1 }
            if state.ended { state.writesAfterEnd += 1 }
        }
    }

    fileprivate func leave() { state.withLock { $0.inFlight -= 1 } }

    private func accept(_ bytes: UnsafeRawBufferPointer) throws {
        try state.withLock { state in
            let position = (state.response?.offset ?? 0) + Int64(state.data.count)
            if let limit = state.ledger.sequentialLimit(from: position), position + Int64(bytes.count) > limit {
                try Self.breach("a sequential write of \(bytes.count) bytes at byte \(position) crossed byte \(limit), where a segment starts", &state)
            }
            state.data.append(contentsOf: bytes)
            state.writeSizes.append(bytes.count)
        }
    }

    /// Hands out a segment when ``Behaviour/acceptsSegments`` says so, checking the range as the
    /// core's sink does.
    public func segment(_ range: Range<Int64>) throws -> (any TransferSegment)? {
        guard behaviour.acceptsSegments else { return nil }
        enter()
        defer { leave() }
        let index = try state.withLock { state -> Int in
            guard let response = state.response, let length = response.expectedLength else {
                try Self.breach("segment \(range) asked for before begin reported a length", &state)
            }
            if let reason = state.ledger.refusal(of: range, after: response.offset + Int64(state.data.count), length: length) {
                try Self.breach(reason, &state)
            }
            state.ledger.add(range)
            state.segments.append(SegmentRecord(range: range))
            return state.segments.count - 1
        }
        endHold()
        return Segment(sink: self, index: index, range: range)
    }

    /// Whether `count` more sequential bytes must wait for a segment (starting the wait's budget).
    private func holds(_ count: Int) -> Bool {
        guard behaviour.acceptsSegments, let limit = behaviour.holdsForSegmentsAfter else { return false }
        let begins = state.withLock { state -> Bool? in
            guard state.segments.isEmpty, state.holding != false, Int64(state.data.count + count) > limit else { return nil }
            defer { state.holding = true }
            return state.holding == nil
        }
        guard let begins else { return false }
        if begins {
            Task { [self, wait = behaviour.segmentWait] in
                var budget = WaitBudget(wait, turn: .milliseconds(20))
                while !budget.isSpent, state.withLock({ $0.holding == true }) {
                    guard (try? await budget.pause()) != nil else { break }
                }
                endHold()
            }
        }
        return true
    }

    /// Calls `callback` once the wait for a segment ended (at once if it has).
    private func whenHoldEnds(_ callback: @escaping @Sendable () -> Void) {
        let waiting = state.withLock { state -> Bool in
            if state.holding == true { state.holdWaiters.append(callback) }
            return state.holding == true
        }
        if !waiting { callback() }
    }

    /// Ends the wait for a segment: sequential writes go on.
    private func endHold() {
        let waiters = state.withLock { state -> [@Sendable () -> Void] in
            state.holding = false
            defer { state.holdWaiters = [] }
            return state.holdWaiters
        }
        for waiter in waiters { waiter() }
    }

    /// Records a broken segment rule and throws the core's error for it.
    private static func breach(_ message: String, _ state: inout State) throws -> Never {
        state.segmentBreaches.append(message)
        throw TransportError(.protocolError, message, isRetryable: false)
    }

    /// Accepts the next bytes of segment `index`.
    fileprivate func acceptSegment(_ index: Int, _ bytes: UnsafeRawBufferPointer) throws {
        try state.withLock { state in
            let segment = state.segments[index]
            guard let entry = state.ledger.entries.firstIndex(where: { $0.range == segment.range }),
                  state.ledger.nextOffset(of: entry, adding: Int64(bytes.count)) != nil else {
                try Self.breach("\(segment.data.count + bytes.count) bytes were written to the \(segment.range.count) bytes of segment \(segment.range)", &state)
            }
            state.ledger.record(Int64(bytes.count), in: entry)
            state.segments[index].data.append(contentsOf: bytes)
        }
    }

    /// A segment of a ``ConformanceSink``: its calls count as the sink's (never overlapping).
    private final class Segment: TransferSegment {
        let sink: ConformanceSink
        let index: Int
        let range: Range<Int64>

        init(sink: ConformanceSink, index: Int, range: Range<Int64>) {
            self.sink = sink
            self.index = index
            self.range = range
        }

        func write(_ bytes: UnsafeRawBufferPointer) async throws {
            sink.enter()
            defer { sink.leave() }
            try sink.acceptSegment(index, bytes)
        }

        func tryWrite(_ bytes: UnsafeRawBufferPointer) throws -> Bool {
            sink.enter()
            defer { sink.leave() }
            try sink.acceptSegment(index, bytes)
            return true
        }

        func whenWritable(_ callback: @escaping @Sendable () -> Void) { callback() }
    }

    /// Sleeps like a slow disk: task cancellation does not cut it short.
    static func sleepIgnoringCancellation(_ duration: Duration) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            runLater(after: duration) { continuation.resume() }
        }
    }
}
