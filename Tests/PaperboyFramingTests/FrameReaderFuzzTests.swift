import Foundation
import PaperboyFraming
import PaperboyTestServers
import PaperboyTesting
import Testing

/// Random streams (good frames, broken headers, random bytes, cut anywhere, read in random
/// pieces) against what the framing rules say the reader must do with each.
@Suite("FrameReader fuzz", .timeLimit(.minutes(2)))
struct FrameReaderFuzzTests {
    @Test func randomStreamsNeverTrapAndNeverReadBeyondTheBound() async throws {
        let seed = ProcessInfo.processInfo.environment["PAPERBOY_FRAME_SEED"].flatMap(UInt64.init) ?? UInt64.random(in: 1...UInt64.max)
        print("FrameReader fuzz: seed \(seed) (set PAPERBOY_FRAME_SEED to replay)")
        // Thousands of system calls and megabytes of data: a thread of its own, not the pool's.
        let report = try await offThePool { try Self.fuzz(seed: seed, streams: 2_500) }
        #expect(report.failures.isEmpty, "seed \(seed): \(report.failures.count) failure(s), first: \(report.failures.prefix(3))")
        // The run went where it should: every outcome was met many times.
        #expect(report.outcomes.values.allSatisfy { $0 >= 20 } && report.outcomes.count == 4, "seed \(seed): outcomes \(report.outcomes)")
        print("FrameReader fuzz: \(report.frames) frames, outcomes \(report.outcomes.sorted { $0.key < $1.key })")
    }

    struct Report: Sendable {
        var failures: [String] = []
        var frames = 0
        var outcomes: [String: Int] = [:]
    }

    /// What the reader must do with `stream` from `offset` on (its next frame or its error), as
    /// docs/WritingTransports.md#framing says; header lines are judged by `Frame.parseHeader`
    /// (checked on its own in FrameTests).
    enum Expected {
        case frame(Frame, next: Int)
        case garbage
        case tooLarge(kind: String, length: Int)
        case closed
    }

    static func expected(_ stream: [UInt8], at offset: Int, limit: Int) -> Expected {
        guard offset < stream.count else { return .closed }
        let window = stream[offset..<min(stream.count, offset + Frame.maxHeaderLength)]
        guard let newline = window.firstIndex(of: UInt8(ascii: "\n")),
              let (kind, length) = Frame.parseHeader(stream[offset..<newline]) else { return .garbage }
        guard length <= limit else { return .tooLarge(kind: kind, length: length) }
        guard newline + 1 + length <= stream.count else { return .closed }
        return .frame(Frame(kind: kind, payload: Data(stream[(newline + 1)..<(newline + 1 + length)])), next: newline + 1 + length)
    }

    /// Where the frame read from `offset` ends (its payload may be cut short); `offset` when
    /// there is no frame there.
    static func end(of expected: Expected, in stream: [UInt8], at offset: Int) -> Int {
        switch expected {
        case .frame(_, let next): return next
        case .closed:
            guard let newline = stream[offset...].prefix(Frame.maxHeaderLength).firstIndex(of: UInt8(ascii: "\n")),
                  let (_, length) = Frame.parseHeader(stream[offset..<newline]) else { return offset }
            return newline + 1 + length
        case .garbage, .tooLarge: return offset
        }
    }

    /// Whether `message` quotes the stream's bytes from `offset`, as the reader's garbage errors do.
    static func quotesStream(_ message: String, _ stream: [UInt8], at offset: Int) -> Bool {
        (1...min(stream.count - offset, 49)).contains { count in
            let quoted = Frame.quote(stream[offset..<(offset + count)])
            return message == quoted || message == quoted + " (then end of output)"
        }
    }

    static func fuzz(seed: UInt64, streams: Int) throws -> Report {
        var random = SplitMix64(seed: seed)
        var report = Report()
        for number in 0..<streams {
            let stream = makeStream(&random)
            let limit = [0, 16, 1_000, 65_536, 262_144].randomElement(using: &random)!
            var cuts: [Int] = Array(stride(from: 512 * 1024, to: stream.count, by: 512 * 1024))
            if stream.count < 300, Int.random(in: 0..<4, using: &random) == 0 {
                cuts += Array(1..<max(1, stream.count))
            } else {
                cuts += (0..<Int.random(in: 0...12, using: &random)).map { _ in Int.random(in: 1...max(1, stream.count), using: &random) }
            }
            let pipe = try ChunkedPipe(Data(stream), cutAt: cuts)
            var reader = FrameReader()
            var offset = 0
            func fail(_ what: String) { report.failures.append("stream \(number) (\(stream.count) bytes, limit \(limit), at \(offset)): \(what)") }
            while true {
                let expected = expected(stream, at: offset, limit: limit)
                let outcome: Result<Frame, FrameIOError>
                do {
                    outcome = .success(try reader.next(from: pipe.readEnd, maxLength: { _ in limit }, wait: pipe.wait))
                } catch {
                    outcome = .failure(error)
                }
                // The reader may hold 64 KiB beyond the frame it reads, no more.
                let beyond = pipe.taken - min(stream.count, end(of: expected, in: stream, at: offset))
                if beyond > 65_536 { fail("read \(beyond) bytes beyond the frame") }
                switch (outcome, expected) {
                case (.success(let frame), .frame(let want, let next)):
                    if frame != want { fail("read \(frame.kind) of \(frame.payload.count) bytes, not \(want.kind) of \(want.payload.count)") }
                    if frame.payload.count > limit { fail("a payload of \(frame.payload.count) bytes passed the limit \(limit)") }
                    report.frames += 1
                    offset = next
                    continue
                case (.failure(.garbage(let message)), .garbage):
                    if !quotesStream(message, stream, at: offset) { fail("garbage \(message) does not quote the stream") }
                    report.outcomes["garbage", default: 0] += 1
                case (.failure(.tooLarge(let kind, let length)), .tooLarge(let wantKind, let wantLength)):
                    if kind != wantKind || length != wantLength { fail("tooLarge(\(kind), \(length)), not (\(wantKind), \(wantLength))") }
                    report.outcomes["tooLarge", default: 0] += 1
                case (.failure(.closed), .closed):
                    report.outcomes[offset == stream.count ? "closed" : "closed mid-frame", default: 0] += 1
                default:
                    fail("got \(outcome), expected \(expected)")
                }
                break
            }
        }
        return report
    }

    /// A stream of one to eight pieces: mostly good frames, some broken or cut short, some noise.
    static func makeStream(_ random: inout SplitMix64) -> [UInt8] {
        var stream: [UInt8] = []
        for _ in 0..<Int.random(in: 1...8, using: &random) {
            let roll = Int.random(in: 0..<100, using: &random)
            if roll < 8 {
                stream += (0..<Int.random(in: 1...64, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
                continue
            }
            if roll < 14 {
                // A header alone, its length anything up to ten digits.
                let digits = Int.random(in: 1...10, using: &random)
                stream += Array("\(kind(&random)) \(String((0..<digits).map { _ in "0123456789".randomElement(using: &random)! }))\n".utf8)
                continue
            }
            var frame = [UInt8](Frame.encode(kind(&random), payload(&random)))
            if roll < 24 {
                // One byte of the header changed, added or removed.
                let newline = frame.firstIndex(of: UInt8(ascii: "\n"))!
                let at = Int.random(in: 0...newline, using: &random)
                switch Int.random(in: 0..<3, using: &random) {
                case 0: frame[at] = UInt8.random(in: 0...255, using: &random)
                case 1: frame.insert(UInt8.random(in: 0...255, using: &random), at: at)
                default: frame.remove(at: at)
                }
            } else if roll < 30 {
                frame.removeLast(Int.random(in: 1...frame.count, using: &random))
            }
            stream += frame
        }
        return stream
    }

    static func kind(_ random: inout SplitMix64) -> String {
        let known = ["HELLO", "OK", "ERROR", "EVENT", "DATA", "STATUS", "ABCDEFGHIJKLMNOP"]
        if Bool.random(using: &random) { return known.randomElement(using: &random)! }
        return String((0..<Int.random(in: 1...16, using: &random)).map { _ in "ABCDEFGHIJKLMNOPQRSTUVWXYZ".randomElement(using: &random)! })
    }

    static func payload(_ random: inout SplitMix64) -> Data {
        let roll = Int.random(in: 0..<100, using: &random)
        // Large ones around the reader's 64 KiB buffer, from a few sizes (generated data is kept).
        let count = roll < 70 ? Int.random(in: 0...100, using: &random)
            : roll < 95 ? Int.random(in: 0...5_000, using: &random) : [65_535, 65_536, 65_537, 150_000].randomElement(using: &random)!
        return randomData(count, seed: UInt64(count))
    }
}
