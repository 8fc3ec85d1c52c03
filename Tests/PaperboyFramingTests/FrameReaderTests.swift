#if canImport(Glibc)
import Glibc
#endif
import Foundation
import PaperboyFraming
import PaperboyTestServers
import PaperboyTesting
import Testing

/// `FrameReader` and `FrameWriter` on real sockets. Every read and write runs on a thread of its
/// own (`offThePool`): they are blocking system calls.
@Suite("FrameReader and FrameWriter", .timeLimit(.minutes(1)))
struct FrameReaderTests {
    /// Reads frames until the reader throws; returns them and the error.
    static func readAll(_ pipe: ChunkedPipe, maxLength: (String) -> Int = { _ in 1 << 20 })
        -> (frames: [Frame], error: FrameIOError) {
        var reader = FrameReader()
        var frames: [Frame] = []
        while true {
            do {
                frames.append(try reader.next(from: pipe.readEnd, maxLength: maxLength, wait: pipe.wait))
            } catch {
                return (frames, error)
            }
        }
    }

    /// What reading a stream gave: the frames, the error that ended it, the bytes the reader
    /// took from the pipe and how many times it waited.
    typealias Read = (frames: [Frame], error: FrameIOError, taken: Int, waits: Int)

    /// Reads `stream` cut at `cuts`, on the calling thread (blocking: never on the pool).
    static func readBlocking(_ stream: Data, cutAt cuts: [Int] = [], maxLength: Int = 1 << 20) throws -> Read {
        let pipe = try ChunkedPipe(stream, cutAt: cuts)
        let (frames, error) = readAll(pipe, maxLength: { _ in maxLength })
        return (frames, error, pipe.taken, pipe.waits)
    }

    /// Reads `stream` cut at `cuts` on a thread of its own.
    static func read(_ stream: Data, cutAt cuts: [Int] = [], maxLength: Int = 1 << 20) async throws -> Read {
        try await offThePool { try readBlocking(stream, cutAt: cuts, maxLength: maxLength) }
    }

    // MARK: Round trips

    @Test(arguments: [0, 1, 31, 65_535, 65_536, 65_537, 200_000])
    func aFrameComesBackAsItWasSent(payloadSize: Int) async throws {
        let payload = try await offThePool { randomData(payloadSize, seed: UInt64(payloadSize) + 1) }
        let stream = Frame.encode("DATA", payload) + Frame.encode("HELLO", Data("{}".utf8))
        let read = try await Self.read(stream)
        #expect(read.frames == [Frame(kind: "DATA", payload: payload), Frame(kind: "HELLO", payload: Data("{}".utf8))])
        #expect(read.error == .closed)
        #expect(read.taken == stream.count)
    }

    @Test func framesCutAtEveryByteComeBackTheSame() async throws {
        let frames = [
            Frame(kind: "HELLO", payload: Data(#"{"protocols":[1]}"#.utf8)), Frame(kind: "OK", payload: Data()),
            Frame(kind: "ABCDEFGHIJKLMNOP", payload: Data([0x0A, 0x00, 0x20, 0x0A])),
        ]
        let stream = frames.map { Frame.encode($0.kind, $0.payload) }.reduce(Data(), +)
        // Every cut read on one thread: a trip through the cooperative pool per cut took this
        // test from milliseconds to 34 s at the start of a full run under load (docs/Testing.md).
        let cuts = try await offThePool { try (1..<stream.count).map { try Self.readBlocking(stream, cutAt: [$0]) } }
        for (cut, read) in zip(1..., cuts) {
            #expect(read.frames == frames, "cut after byte \(cut)")
            #expect(read.error == .closed, "cut after byte \(cut)")
        }
        let oneByteAtATime = try await Self.read(stream, cutAt: Array(1..<stream.count))
        #expect(oneByteAtATime.frames == frames)
        #expect(oneByteAtATime.waits == stream.count + 1, "one read per byte, then the end")
    }

    @Test func aHeaderSplitByTheEndOfTheReadersBufferIsReadWhole() async throws {
        // The reader's buffer holds 64 KiB: the first read takes the first frame (65,533 bytes) and
        // "HEL" of the second header, whose rest comes with the next read.
        let payload = try await offThePool { randomData(65_522, seed: 7) }
        let first = Frame.encode("DATA", payload)
        #expect(first.count == 65_533)
        let stream = first + Frame.encode("HELLO", Data("{}".utf8)) + Frame.encode("OK")
        let read = try await Self.read(stream, cutAt: [65_536])
        #expect(read.frames.map(\.kind) == ["DATA", "HELLO", "OK"])
        #expect(read.frames.first?.payload == payload)
        #expect(read.error == .closed)
    }

    // MARK: Limits

    @Test func aLengthAboveTheLimitIsRefusedBeforeAByteOfThePayloadIsRead() async throws {
        let stream = Data("DATA 11\nhello world".utf8)
        let refused = try await Self.read(stream, cutAt: [8], maxLength: 10)
        #expect(refused.frames.isEmpty)
        #expect(refused.error == .tooLarge(kind: "DATA", length: 11))
        #expect(refused.waits == 1, "only the header's read")
        #expect(refused.taken == 8, "only the header's bytes")

        let atTheLimit = try await Self.read(stream, cutAt: [8], maxLength: 11)
        #expect(atTheLimit.frames == [Frame(kind: "DATA", payload: Data("hello world".utf8))])
    }

    @Test func theLimitIsAskedForEachFramesKind() async throws {
        let asked = try await offThePool { () -> [String] in
            let pipe = try ChunkedPipe(Frame.encode("HELLO", Data("{}".utf8)) + Frame.encode("DATA", Data(count: 5)))
            var kinds: [String] = []
            _ = Self.readAll(pipe) { kind in
                kinds.append(kind)
                return kind == "DATA" ? 4 : 100
            }
            return kinds
        }
        #expect(asked == ["HELLO", "DATA"])
    }

    @Test func theReaderTakesAtMost64KiBBeyondTheFrameItReturns() async throws {
        // All 320 KB are in the pipe before the first read: only the reader's bound limits what it takes.
        let beyond = try await offThePool { () -> [Int] in
            let frames = (0..<40).map { Frame(kind: "DATA", payload: randomData(8_000, seed: UInt64($0) + 100)) }
            let stream = frames.map { Frame.encode($0.kind, $0.payload) }.reduce(Data(), +)
            let pipe = try ChunkedPipe(stream)
            var reader = FrameReader()
            var returned = 0
            var beyond: [Int] = []
            for _ in frames {
                let frame = try reader.next(from: pipe.readEnd, maxLength: { _ in 1 << 20 }, wait: pipe.wait)
                returned += Frame.encode(frame.kind, frame.payload).count
                beyond.append(pipe.taken - returned)
            }
            return beyond
        }
        #expect(beyond.allSatisfy { (0...65_536).contains($0) }, "bytes read beyond the frames returned: \(beyond)")
        #expect(beyond.first == 65_536 - 8_010, "the first read fills the 64 KiB buffer, no more")
    }

    // MARK: Malformed headers, each with its exact error

    static let letters31 = String(repeating: "A", count: 31)
    static let letters32 = String(repeating: "A", count: 32)
    static let letters40 = String(repeating: "A", count: 40)
    static let malformed: [(String, FrameIOError)] = [
        ("hello 3\nabc", .garbage(#""hello 3\nabc""#)),
        ("HELLO 1x\n", .garbage(#""HELLO 1x\n""#)),
        ("HELLO -1\n", .garbage(#""HELLO -1\n""#)),
        ("HELLO +1\n", .garbage(#""HELLO +1\n""#)),
        ("HELLO 12345678901\n{}", .garbage(#""HELLO 12345678901\n{}""#)),
        ("HELLO\n", .garbage(#""HELLO\n""#)),
        ("\n", .garbage(#""\n""#)),
        ("HELLO 5\r\nhello", .garbage(#""HELLO 5\x0d\nhello""#)),
        // No newline within 32 bytes: refused as soon as 32 are there; fewer, at the end of input.
        (letters40, .garbage("\"\(letters40)\"")),
        (letters32, .garbage("\"\(letters32)\"")),
        (letters31, .garbage("\"\(letters31)\" (then end of output)")),
        ("HELLO 5", .garbage(#""HELLO 5" (then end of output)"#)),
    ]

    @Test(arguments: malformed)
    func aMalformedHeaderIsGarbage(stream: String, expected: FrameIOError) async throws {
        let read = try await Self.read(Data(stream.utf8))
        #expect(read.frames.isEmpty)
        #expect(read.error == expected)
    }

    @Test func aMalformedHeaderAfterAGoodFrameEndsTheStreamThere() async throws {
        let read = try await Self.read(Frame.encode("OK") + Data("OK 1 \n".utf8) + Frame.encode("OK"))
        #expect(read.frames == [Frame(kind: "OK", payload: Data())])
        #expect(read.error == .garbage(#""OK 1 \nOK 0\n""#))
    }

    @Test func aTenDigitLengthIsAHeaderAndThenTooLarge() async throws {
        let read = try await Self.read(Data("HELLO 9999999999\n".utf8), maxLength: 262_144)
        #expect(read.error == .tooLarge(kind: "HELLO", length: 9_999_999_999))
    }

    // MARK: End of input

    @Test func theEndOfInputBetweenFramesIsClosed() async throws {
        #expect(try await Self.read(Data()).error == .closed)
        let read = try await Self.read(Frame.encode("OK"))
        #expect(read.frames.count == 1)
        #expect(read.error == .closed)
    }

    @Test func theEndOfInputInsideAPayloadIsClosed() async throws {
        // A payload cut short reads as a peer that closed: the frame is never returned.
        let read = try await Self.read(Data("HELLO 10\nabc".utf8), cutAt: [9])
        #expect(read.frames.isEmpty)
        #expect(read.error == .closed)
        #expect(read.taken == 12)
    }

    @Test func anErrorFromWaitEndsTheReadWithNothingRead() async throws {
        for thrown in [FrameIOError.timedOut(.seconds(3)), .abandoned] {
            let (error, taken) = try await offThePool { () -> (FrameIOError?, Int) in
                let pipe = try ChunkedPipe(chunks: [Frame.encode("OK")])
                _ = try pipe.wait(pipe.readEnd)
                var reader = FrameReader()
                do throws(FrameIOError) {
                    _ = try reader.next(from: pipe.readEnd, maxLength: { _ in 10 }, wait: { _ throws(FrameIOError) in throw thrown })
                    return (nil, pipe.taken)
                } catch {
                    return (error, pipe.taken)
                }
            }
            #expect(error == thrown)
            #expect(taken == 0)
        }
    }

    // MARK: FrameWriter

    @Test func theWriterWritesAllOfALargeFrameAsTheReaderTakesIt() async throws {
        let (readEnd, writeEnd) = try socketPair()
        defer { close(readEnd) }
        let payload = try await offThePool { randomData(1 << 20, seed: 3) }
        async let written: Int = offThePool {
            var waits = 0
            defer { close(writeEnd) }
            try FrameWriter.write(Frame.encode("DATA", payload), to: writeEnd, isSocket: true, wait: { _ in waits += 1 })
            return waits
        }
        let frame = try await offThePool {
            var reader = FrameReader()
            return try reader.next(from: readEnd, maxLength: { _ in 1 << 20 }, wait: { _ in })
        }
        #expect(frame == Frame(kind: "DATA", payload: payload))
        #expect(try await written >= 1, "wait is called before each write")
    }

    @Test func writingToAPeerThatLeftIsClosedWithoutASignal() async throws {
        let (gone, near) = try socketPair()
        close(gone)
        defer { close(near) }
        let (error, brokenPipes) = try await offThePool { () -> (FrameIOError?, Int) in
            var brokenPipes = 0
            do throws(FrameIOError) {
                try FrameWriter.write(Frame.encode("OK"), to: near, isSocket: true, brokenPipe: { brokenPipes += 1 })
                return (nil, brokenPipes)
            } catch {
                return (error, brokenPipes)
            }
        }
        #expect(error == .closed)
        #expect(brokenPipes == 1)
    }

    @Test func aWriterWhoseWaitGivesUpWritesNothing() async throws {
        let (near, far) = try socketPair()
        defer {
            close(near)
            close(far)
        }
        let error = try await offThePool { () -> FrameIOError? in
            do throws(FrameIOError) {
                try FrameWriter.write(Frame.encode("OK"), to: near, isSocket: true, wait: { _ throws(FrameIOError) in throw .abandoned })
                return nil
            } catch {
                return error
            }
        }
        #expect(error == .abandoned)
        #expect(unreadBytes(far) == 0)
    }
}

extension FrameIOError: Equatable {
    public static func == (lhs: FrameIOError, rhs: FrameIOError) -> Bool {
        switch (lhs, rhs) {
        case (.closed, .closed), (.abandoned, .abandoned): true
        case (.timedOut(let a), .timedOut(let b)): a == b
        case (.garbage(let a), .garbage(let b)), (.system(let a), .system(let b)): a == b
        case (.tooLarge(let kindA, let lengthA), .tooLarge(let kindB, let lengthB)): kindA == kindB && lengthA == lengthB
        default: false
        }
    }
}
