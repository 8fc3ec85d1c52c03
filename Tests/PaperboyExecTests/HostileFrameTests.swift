#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Paperboy
@testable import PaperboyExec
import PaperboyFraming
import PaperboyTesting
import Testing

/// Numbers a hostile helper may send: edges of every integer and floating-point range.
let hostileNumbers = [
    "0", "1", "-1", "1e300", "-1e300", "1e-300", "1.5", "-0", "4611686018427387904", "4611686018427387903",
    "9223372036854775807", "9223372036854775808", "-9223372036854775808", "18446744073709551616",
    "99999999999999999999999999", "NaN", "Infinity", "-Infinity", "null", "\"12\"", "[]", "{}", "true",
]

@Suite("Exec protocol against hostile frames", .timeLimit(.minutes(3)))
struct HostileFrameTests {
    let folder = TempFolder()
    let url = URL(string: "fake://host/file.bin")!

    @Test(arguments: [
        ("\"retry_after\": 1e300", TransportError.maxRetryAfter),
        ("\"retry_after\": -5", nil),
        ("\"retry_after\": 1e-300", Duration.milliseconds(1)),
        ("\"retry_after\": 2.5", Duration.milliseconds(2500)),
    ] as [(String, Duration?)])
    func retryAfterIsClampedNeverATrap(fields: String, expected: Duration?) async throws {
        let transport = folder.fakeTransport("error", [fields], clock: TestClock())
        let job = TransferJob(url: url, connectTimeout: .seconds(10), idleTimeout: .seconds(10))
        let error = try #require(await failure(of: transport, job, into: RecordingSink()) as? TransportError)
        #expect(error.code == .rateLimited)
        #expect(error.retryAfter == expected, "\(fields)")
        transport.retireIdleHelpers()
    }

    /// Valid frames of every kind, with numbers picked from ``hostileNumbers`` now and then.
    static func validFrames(_ random: inout SplitMix64, id: Int) -> [Data] {
        func number(_ usual: String) -> String {
            random.next() % 3 == 0 ? hostileNumbers.randomElement(using: &random)! : usual
        }
        let length = Int.random(in: 0...3000, using: &random)
        let offset = Int.random(in: 0...length, using: &random)
        // Half of the answers are to a range (`end`, for a FETCH that asked for one).
        let end = random.next() % 2 == 0 ? Int.random(in: offset...length, using: &random) : nil
        let endField = end.map { #", "end": \#(number("\($0)"))"# } ?? ""
        var frames = [
            ExecProtocol.frame("CHALLENGE", Data(#"{"id": \#(number("\(id)")), "kind": "password", "previous_failures": \#(number("0")), "prompts": ["p"]}"#.utf8)),
            ExecProtocol.frame("BEGIN", Data(#"{"id": \#(number("\(id)")), "offset": \#(number("\(offset)")), "length": \#(number("\(length)")), "validator": {"value": "v", "strength": "strong"}\#(endField)}"#.utf8)),
        ]
        var left = (end ?? length) - offset
        while left > 0 {
            let count = min(left, Int.random(in: 1...1500, using: &random))
            frames.append(ExecProtocol.frame("DATA", Data(repeating: 0x41, count: count)))
            left -= count
        }
        frames.append(random.next() % 2 == 0
            ? ExecProtocol.frame("DONE", Data(#"{"id": \#(number("\(id)"))}"#.utf8))
            : ExecProtocol.frame("ERROR", Data(#"{"id": \#(number("\(id)")), "code": "server-error", "message": "m\u{1B}", "retry_after": \#(number("1"))}"#.utf8)))
        return frames
    }

    /// One random change: a flipped, inserted or deleted byte, or a header length replaced.
    static func mutate(_ stream: inout [UInt8], _ random: inout SplitMix64) {
        guard !stream.isEmpty else { return }
        let at = Int.random(in: 0..<stream.count, using: &random)
        switch random.next() % 5 {
        case 0: stream[at] ^= UInt8.random(in: 1...255, using: &random)
        case 1: stream.insert(UInt8.random(in: 0...255, using: &random), at: at)
        case 2: stream.remove(at: at)
        case 3: stream[at] = [UInt8(ascii: "0"), UInt8(ascii: "9"), UInt8(ascii: "\n"), UInt8(ascii: " ")].randomElement(using: &random)!
        default:
            // A digit run becomes a huge or odd number.
            if let digit = stream[at...].firstIndex(where: { (48...57).contains($0) }) {
                stream.insert(contentsOf: Array(hostileNumbers.randomElement(using: &random)!.utf8), at: digit)
            }
        }
    }

    /// Reads `stream` through the frame reader and the transfer checks, as a helper's stdout
    /// would arrive; returns what they let through, or stops at the first refusal.
    static func play(_ stream: [UInt8], id: Int, asksForRange: Bool = true) throws -> [TransferFrames.Step] {
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else { throw POSIXError(.EMFILE) }
        defer { close(fds[0]) }
        let wrote = stream.withUnsafeBytes { write(fds[1], $0.baseAddress, $0.count) }
        close(fds[1])
        precondition(wrote == stream.count, "the test writes less than a pipe holds")
        var reader = FrameReader()
        var frames = TransferFrames(id: id, url: URL(string: "fake://host/f")!, helperName: "fuzz", asksForRange: asksForRange)
        var steps: [TransferFrames.Step] = []
        while true {
            let frame: Frame
            do {
                // Everything is in the pipe and its write end closed: no wait ever starts.
                frame = try reader.next(from: fds[0], idleTimeout: .seconds(5), clock: SystemClock(), abandoned: { false })
            } catch {
                return steps
            }
            do {
                steps.append(try frames.accept(frame))
            } catch {
                return steps
            }
            if case .done = steps.last { return steps }
        }
    }

    /// Thousands of valid and mutated frame streams: no trap, and whatever passes the checks is
    /// in range (offsets and lengths, bytes within the announced length, Retry-After clamped).
    @Test func mutatedFrameStreamsNeverTrapAndOnlyRangeCheckedNumbersPass() async throws {
        // Seconds of CPU in a debug build: on a thread of its own, not the cooperative pool.
        let seed: UInt64 = 0x5EED_F4A3_E5C0_0015
        let problems = try await onAThreadOfItsOwn { try Self.fuzz(seed: seed, rounds: 4000) }
        #expect(problems.isEmpty, "seed \(seed): \(problems.prefix(10))")
    }

    /// Plays `rounds` random streams; returns what passed the checks out of range, per round.
    static func fuzz(seed: UInt64, rounds: Int) throws -> [String] {
        var random = SplitMix64(seed: seed)
        var problems: [String] = []
        func check(_ condition: Bool, _ what: @autoclosure () -> String) {
            if !condition { problems.append(what()) }
        }
        for round in 0..<rounds {
            let id = 7
            var stream = validFrames(&random, id: id).flatMap { Array($0) }
            for _ in 0..<Int.random(in: 0...4, using: &random) { mutate(&stream, &random) }
            let steps = try play(stream, id: id)
            var announced: Int64?
            var position: Int64 = 0
            for step in steps {
                switch step {
                case .begin(let response):
                    check((0...ExecProtocol.maxResourceLength).contains(response.offset), "round \(round): BEGIN offset \(response.offset)")
                    check((response.expectedLength ?? .max) >= response.offset,
                          "round \(round): BEGIN length \(response.expectedLength ?? -1) below offset \(response.offset)")
                    if let end = response.end {
                        check(response.offset <= end && end <= (response.expectedLength ?? -1),
                              "round \(round): BEGIN end \(end) outside offset \(response.offset) to length \(response.expectedLength ?? -1)")
                    }
                    announced = response.end ?? response.expectedLength
                    position = response.offset
                case .data(let payload):
                    position += Int64(payload.count)
                    check(position <= (announced ?? ExecProtocol.maxResourceLength), "round \(round): DATA to \(position) past \(announced ?? -1)")
                case .challenge(let challenge):
                    check(challenge.previousFailureCount >= 0, "round \(round): CHALLENGE failures \(challenge.previousFailureCount)")
                case .done:
                    check(position == (announced ?? position), "round \(round): DONE at \(position) of \(announced ?? -1)")
                }
            }
        }
        return problems
    }

    /// `BEGIN`'s `end`: only in answer to a `FETCH` with one, and between the offset and the
    /// length; then no byte past it, and `DONE` only there.
    @Test func aRangeAnswerEndsWhereItSaidAndNowhereElse() throws {
        func begin(_ fields: String) -> Frame {
            Frame(kind: "BEGIN", payload: Data(#"{"id": 1, "offset": 10, "length": 100\#(fields)}"#.utf8))
        }
        func refusal(_ frame: Frame, asksForRange: Bool) -> String? {
            var frames = TransferFrames(id: 1, url: URL(string: "fake://host/f")!, helperName: "h", asksForRange: asksForRange)
            do {
                _ = try frames.accept(frame)
                return nil
            } catch {
                return error.what
            }
        }
        #expect(refusal(begin(#", "end": 50"#), asksForRange: false)?.contains("an end to a FETCH without one") == true)
        for end in ["9", "101", "-1", "4611686018427387904", "1e300"] {
            #expect(refusal(begin(#", "end": \#(end)"#), asksForRange: true) != nil, "end \(end) was accepted")
        }
        #expect(refusal(begin(#", "end": 10"#), asksForRange: true) == nil)

        var frames = TransferFrames(id: 1, url: URL(string: "fake://host/f")!, helperName: "h", asksForRange: true)
        guard case .begin(let response) = try frames.accept(begin(#", "end": 50"#)) else {
            Issue.record("BEGIN was not a begin")
            return
        }
        #expect(response.offset == 10 && response.end == 50 && response.expectedLength == 100)
        _ = try frames.accept(Frame(kind: "DATA", payload: Data(count: 30)))
        #expect(throws: Conversation.Failure.self) { try frames.accept(Frame(kind: "DONE", payload: Data(#"{"id": 1}"#.utf8))) }
        var full = frames
        _ = try full.accept(Frame(kind: "DATA", payload: Data(count: 10)))
        #expect(throws: Conversation.Failure.self) { try full.accept(Frame(kind: "DATA", payload: Data(count: 1))) }
        guard case .done = try full.accept(Frame(kind: "DONE", payload: Data(#"{"id": 1}"#.utf8))) else {
            Issue.record("DONE at the range's end was not done")
            return
        }
    }

    /// `ERROR` frames with every hostile `retry_after`: each gives a delay of at most a day, or none.
    @Test func everyHostileRetryAfterIsClampedOrDropped() {
        for value in hostileNumbers {
            let frame = Frame(kind: "ERROR", payload: Data(#"{"code": "rate-limited", "message": "m", "retry_after": \#(value)}"#.utf8))
            var frames = TransferFrames(id: 1, url: URL(string: "fake://host/f")!, helperName: "fuzz")
            do {
                _ = try frames.accept(frame)
                Issue.record("an ERROR frame was accepted as a step")
            } catch {
                if let remote = error.remote, let delay = remote.retryAfter {
                    #expect(delay >= .zero && delay <= TransportError.maxRetryAfter, "retry_after \(value) gave \(delay)")
                }
            }
        }
    }
}
