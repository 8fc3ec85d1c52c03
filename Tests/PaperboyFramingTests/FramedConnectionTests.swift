#if canImport(Glibc)
import Glibc
#endif
import Foundation
import PaperboyFraming
import PaperboyTestServers
import PaperboyTesting
import Synchronization
import Testing

/// `FramedConnection` over real Unix socket pairs: the frames each way, the refusals that end
/// it, and its end from either side. Blocking reads and writes of the far end run off the pool.
@Suite("FramedConnection", .timeLimit(.minutes(2)))
struct FramedConnectionTests {
    /// What one connection's callbacks saw.
    final class Seen: Sendable {
        private struct Record {
            var frames: [Frame] = []
            var ends: [FramedConnection.End] = []
        }
        private let record = Mutex(Record())

        var frames: [Frame] { record.withLock { $0.frames } }
        var ends: [FramedConnection.End] { record.withLock { $0.ends } }

        func record(_ frame: Frame) { record.withLock { $0.frames.append(frame) } }
        func record(_ end: FramedConnection.End) { record.withLock { $0.ends.append(end) } }

        /// Starts `connection`, recording its frames (when `keep` says so) and its ends.
        func start(_ connection: FramedConnection, keep: @escaping @Sendable (Frame) -> Bool = { _ in true },
                   onEnd: @escaping @Sendable (FramedConnection.End) -> Void = { _ in }) {
            connection.start(name: "test", readerStackSize: 512 * 1024, onFrame: { [self] frame in
                guard keep(frame) else { return }
                record.withLock { $0.frames.append(frame) }
            }, onEnd: { [self] end in
                record.withLock { $0.ends.append(end) }
                onEnd(end)
            })
        }
    }

    /// `count` bytes of a pattern that names `writer` and `index` in every 16 bytes.
    static func payload(writer: Int, index: Int, count: Int) -> Data {
        var stamp = Data(count: 16)
        stamp.withUnsafeMutableBytes { bytes in
            bytes.storeBytes(of: UInt64(writer).bigEndian, toByteOffset: 0, as: UInt64.self)
            bytes.storeBytes(of: UInt64(index).bigEndian, toByteOffset: 8, as: UInt64.self)
        }
        // Doubled, not appended stamp by stamp: a few copies for a frame of hundreds of kilobytes.
        var data = stamp
        while data.count < count { data.append(data) }
        return data.prefix(count)
    }

    /// The kind of the frames of `writer`: `WA`, `WB`…
    static func kind(writer: Int) -> String {
        "W" + String(UnicodeScalar(UInt8(ascii: "A") + UInt8(writer)))
    }

    /// Reads `fd` until the end; returns the frames read whole and how reading ended.
    static func readToTheEnd(_ fd: Int32) async throws -> (frames: [Frame], error: FrameIOError) {
        try await offThePool {
            var reader = FrameReader()
            var frames: [Frame] = []
            while true {
                do throws(FrameIOError) {
                    frames.append(try reader.next(from: fd, maxLength: { _ in 1 << 24 }, wait: { _ in }))
                } catch {
                    return (frames, error)
                }
            }
        }
    }

    @Test func framesGoBothWaysInOrder() async throws {
        let (near, far) = try socketPair()
        let here = FramedConnection(fd: near, maxPayloadLength: 1 << 20)
        let there = FramedConnection(fd: far, maxPayloadLength: 1 << 20)
        let seenHere = Seen()
        let seenThere = Seen()
        seenHere.start(here)
        seenThere.start(there)
        // Some larger than a socket's buffer: written in several pieces.
        let sizes = [0, 1, 15, 16, 17, 4096, 300_000, 65_537, 0, 700_000, 3, 200_000]
        let out = sizes.enumerated().map { Frame(kind: "OUT", payload: Self.payload(writer: 1, index: $0.offset, count: $0.element)) }
        let back = sizes.reversed().enumerated().map { Frame(kind: "BACK", payload: Self.payload(writer: 2, index: $0.offset, count: $0.element)) }
        for (outgoing, returning) in zip(out, back) {
            #expect(here.send(Frame.encode(outgoing.kind, outgoing.payload)))
            #expect(there.send(Frame.encode(returning.kind, returning.payload)))
        }
        try await eventually("every frame to arrive", seen: "\(seenThere.frames.count) there, \(seenHere.frames.count) here") {
            seenThere.frames.count == out.count && seenHere.frames.count == back.count
        }
        #expect(seenThere.frames == out)
        #expect(seenHere.frames == back)
        here.close()
        try await eventually("both ends to end", seen: "\(seenHere.ends), \(seenThere.ends)") { here.hasEnded && there.hasEnded }
        #expect(seenHere.ends == [.closed])
        #expect(seenThere.ends == [.closed])
    }

    @Test func framesThatArrivedWithAHandshakeAreReadByTheConnectionThatGoesOn() async throws {
        let (near, far) = try socketPair()
        // The peer's greeting and two more frames in one write: the handshake's read takes them all in.
        let greeting = Frame(kind: "HELLO", payload: Data("hi".utf8))
        let following = [Frame(kind: "EVENT", payload: Data("one".utf8)), Frame(kind: "EVENT", payload: Data())]
        let bytes = ([greeting] + following).reduce(into: Data()) { $0.append(Frame.encode($1.kind, $1.payload)) }
        #expect(bytes.withUnsafeBytes { Glibc.write(far, $0.baseAddress, $0.count) } == bytes.count)
        var reader = FrameReader()
        let first = try reader.next(from: near, maxLength: { _ in 1 << 20 }, wait: { _ in })
        #expect(first == greeting)
        let here = FramedConnection(fd: near, maxPayloadLength: 1 << 20)
        let seen = Seen()
        here.start(name: "test", readerStackSize: 512 * 1024, onFrame: { frame in seen.record(frame) },
                   onEnd: { end in seen.record(end) }, continuing: reader)
        try await eventually("the frames after the greeting to arrive", seen: "\(seen.frames)") { seen.frames.count == following.count }
        #expect(seen.frames == following)
        Glibc.close(far)
        try await eventually("the end", seen: "\(seen.ends)") { here.hasEnded }
        #expect(seen.ends == [.closed])
    }

    @Test func manyFramesQueuedForAPeerThatIsNotReadingGoOutInOrder() async throws {
        let (near, far) = try socketPair()
        let here = FramedConnection(fd: near, maxPayloadLength: 1 << 20, drainTimeout: .seconds(600))
        Seen().start(here)
        // Larger than the socket's buffers together: most wait in the queue while nothing is read.
        let frames = (0..<3_000).map { Frame(kind: "Q", payload: Self.payload(writer: 1, index: $0, count: 200 + $0 % 700)) }
        for frame in frames { #expect(here.send(Frame.encode(frame.kind, frame.payload))) }
        // Then the connection closes once all went out (blocking: off the pool), while the far end reads.
        async let drained: Void = offThePool { here.closeAfterSending() }
        let (read, error) = try await Self.readToTheEnd(far)
        try await drained
        Glibc.close(far)
        #expect(read == frames)
        #expect(error == .closed)
    }

    @Test func aFrameOverTheLimitIsRefusedNamingItsSizeAndTheLimitAndTheConnectionEnds() async throws {
        let (near, far) = try socketPair()
        defer { close(far) }
        let connection = FramedConnection(fd: near, maxPayloadLength: 100, drainTimeout: .seconds(60))
        let seen = Seen()
        seen.start(connection)
        // Larger than the socket's buffer: still being written when the reader stops (with
        // nothing queued behind it), and written whole before the socket is shut down.
        let large = Frame(kind: "LARGE", payload: Self.payload(writer: 0, index: 0, count: 1 << 20))
        #expect(connection.send(Frame.encode(large.kind, large.payload)))
        try await eventually("the writer to be inside the large frame", seen: "\(unreadBytes(far)) bytes") { unreadBytes(far) > 1000 }
        try await offThePool { try FrameWriter.write(Frame.encode("SMALL", Data(count: 100)) + Data("BIG 101\n".utf8), to: far, isSocket: true) }
        try await eventually("the reader to stop", seen: "\(seen.ends)") { !connection.isOpen }
        let (frames, error) = try await Self.readToTheEnd(far)
        guard case .closed = error else {
            Issue.record("the connection did not end cleanly: \(error)")
            return
        }
        let problem = "BIG frame of 101 bytes; the limit is 100"
        #expect(frames == [large])
        try await eventually("the connection to end", seen: "\(seen.ends)") { connection.hasEnded }
        #expect(seen.frames == [Frame(kind: "SMALL", payload: Data(count: 100))])
        #expect(seen.ends == [.tooLarge(problem)])
        #expect(!connection.send(Frame.encode("AFTER")))
    }

    @Test(arguments: [
        ("DATA 100\n" + String(repeating: "x", count: 50), FramedConnection.End.cut("the connection ended 50 bytes into a DATA frame of 100 bytes")),
        ("DATA 10", .malformed(#"not a frame header: "DATA 10" (then end of output)"#)),
    ])
    func thePeerClosingMidFrameEndsItWithAnError(sent: String, end: FramedConnection.End) async throws {
        let (near, far) = try socketPair()
        let connection = FramedConnection(fd: near, maxPayloadLength: 1000)
        let seen = Seen()
        seen.start(connection)
        try await offThePool {
            try FrameWriter.write(Frame.encode("WHOLE", Data("1".utf8)) + Data(sent.utf8), to: far, isSocket: true)
            close(far)
        }
        try await eventually("the connection to end", seen: "\(seen.ends)") { connection.hasEnded }
        #expect(seen.frames == [Frame(kind: "WHOLE", payload: Data("1".utf8))])
        #expect(seen.ends == [end])
    }

    @Test func closingWithWritesQueuedEndsBothThreadsAndCallsOnEndOnce() async throws {
        let (near, far) = try socketPair()
        defer { close(far) }
        let connection = FramedConnection(fd: near, maxPayloadLength: 1000)
        let ends = Atomic<Int>(0)
        let seen = Seen()
        seen.start(connection, onEnd: { _ in ends.add(1, ordering: .relaxed) })
        // The far end reads nothing: the writer blocks inside the first frame, the second waits.
        #expect(connection.send(Frame.encode("HUGE", Data(count: 4 << 20))))
        #expect(connection.send(Frame.encode("QUEUED", Data("never".utf8))))
        try await eventually("the writer to be inside the first frame", seen: "\(unreadBytes(far)) bytes") { unreadBytes(far) > 0 }
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<8 { group.addTask { connection.close() } }
        }
        try await eventually("both threads to end", seen: "\(seen.ends)") { connection.hasEnded }
        #expect(seen.ends == [.closed])
        #expect(ends.load(ordering: .relaxed) == 1)
        #expect(!connection.send(Frame.encode("AFTER")))
        connection.close()
        // What got out is a part of the first frame; the queued one never left.
        let (frames, error) = try await Self.readToTheEnd(far)
        #expect(frames.isEmpty)
        guard case .closed = error else {
            Issue.record("reading the far end ended with \(error)")
            return
        }
        #expect(ends.load(ordering: .relaxed) == 1)
    }

    @Test func framesFromManyTasksNeverInterleave() async throws {
        let (near, far) = try socketPair()
        let here = FramedConnection(fd: near, maxPayloadLength: 1 << 20)
        let there = FramedConnection(fd: far, maxPayloadLength: 1 << 20)
        let writers = 8
        let perWriter = 25
        // Sizes from a seeded generator, some larger than a socket's buffer.
        var generator = SplitMix64(seed: 28)
        let sizes = (0..<writers).map { _ in (0..<perWriter).map { _ in Int.random(in: 0...300_000, using: &generator) } }
        // Each frame is checked whole as it arrives (nothing kept but what it said), and each
        // writer's frames come in the order it sent them.
        let checked = Mutex<(next: [Int], bad: [String])>((Array(repeating: 0, count: writers), []))
        let seenThere = Seen()
        seenThere.start(there, keep: { frame in
            let writer = Int(frame.kind.utf8.last ?? 0) - Int(UInt8(ascii: "A"))
            checked.withLock { state in
                guard (0..<writers).contains(writer) else { return state.bad.append("kind \(frame.kind)") }
                let index = state.next[writer]
                guard index < perWriter, frame.payload == Self.payload(writer: writer, index: index, count: sizes[writer][index]) else {
                    return state.bad.append("writer \(writer)'s frame \(index): \(frame.payload.count) bytes, not as sent")
                }
                state.next[writer] += 1
            }
            return false
        })
        let seenHere = Seen()
        seenHere.start(here)
        await withTaskGroup(of: Void.self) { group in
            for writer in 0..<writers {
                group.addTask {
                    for index in 0..<perWriter {
                        here.send(Frame.encode(Self.kind(writer: writer), Self.payload(writer: writer, index: index, count: sizes[writer][index])))
                    }
                }
            }
        }
        try await eventually("every frame to arrive", seen: "\(checked.withLock { $0 })") {
            checked.withLock { $0.next.reduce(0, +) == writers * perWriter || !$0.bad.isEmpty } || !seenThere.ends.isEmpty
        }
        #expect(checked.withLock { $0.bad } == [])
        #expect(seenThere.ends == [])
        there.close()
        try await eventually("both ends to end", seen: "\(seenHere.ends)") { here.hasEnded && there.hasEnded }
        #expect(seenHere.ends == [.closed])
    }

    @Test func aPeerThatStopsReadingDoesNotHoldTheEndPastTheDrainTimeout() async throws {
        let (near, far) = try socketPair()
        defer { close(far) }
        let connection = FramedConnection(fd: near, maxPayloadLength: 10, drainTimeout: .milliseconds(10))
        let seen = Seen()
        seen.start(connection, onEnd: { _ in
            // Larger than the socket's buffer, to a peer that reads nothing.
            connection.send(Frame.encode("ERROR", Data(count: 4 << 20)))
        })
        try await offThePool { try FrameWriter.write(Data("BIG 11\n".utf8), to: far, isSocket: true) }
        try await eventually("the connection to end", seen: "\(seen.ends)") { connection.hasEnded }
        #expect(seen.ends == [.tooLarge("BIG frame of 11 bytes; the limit is 10")])
    }
}
