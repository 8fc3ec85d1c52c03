import Foundation
import Paperboy
@testable import PaperboySFTP
import PaperboyTestServers
import PaperboyTesting
import Synchronization
import Testing

/// How a split file's ranges are dealt to connections, and a split download's sink calls.
@Suite("SFTP ranges dealt to two connections", .timeLimit(.minutes(2)))
struct RangeDealerTests {
    /// Every range the dealer hands out, in order.
    func deal(_ range: Range<Int64>, minimum: Int64) -> [Range<Int64>] {
        let dealer = RangeDealer(range, connections: 2, minimum: minimum)
        var ranges: [Range<Int64>] = []
        while let next = dealer.next() { ranges.append(next) }
        return ranges
    }

    @Test func rangesCoverTheFileOnceAndShrinkTowardsTheEnd() {
        let mib: Int64 = 1 << 20
        let ranges = deal(5..<(1024 * mib + 5), minimum: 8 * mib)
        #expect(ranges.first?.lowerBound == 5)
        #expect(ranges.last?.upperBound == 1024 * mib + 5)
        #expect(zip(ranges, ranges.dropFirst()).allSatisfy { $0.upperBound == $1.lowerBound })
        // A quarter of what is left first, then smaller and smaller, never below the minimum.
        #expect(ranges.first?.count == 256 << 20)
        #expect(zip(ranges, ranges.dropFirst()).allSatisfy { $0.count >= $1.count || $1 == ranges.last })
        #expect(ranges.allSatisfy { $0.count >= 8 << 20 })
        #expect(ranges.last.map { $0.count < 16 << 20 } == true)
        #expect((10...24).contains(ranges.count))
    }

    @Test func aRangeSmallerThanTwoMinimumsIsHandedOutWhole() {
        #expect(deal(0..<100, minimum: 60) == [0..<100])
        #expect(deal(0..<120, minimum: 60) == [0..<60, 60..<120])
        #expect(deal(7..<7, minimum: 60) == [])
    }

    @Test func connectionsTakingRangesAtOnceGetEachByteOnce() async {
        let dealer = RangeDealer(0..<(1 << 30), connections: 2, minimum: 4096)
        let taken = await withTaskGroup(of: [Range<Int64>].self) { group in
            for _ in 0..<4 {
                group.addTask {
                    var mine: [Range<Int64>] = []
                    while let range = dealer.next() { mine.append(range) }
                    return mine
                }
            }
            var all: [Range<Int64>] = []
            for await part in group { all += part }
            return all
        }.sorted { $0.lowerBound < $1.lowerBound }
        #expect(taken.first?.lowerBound == 0 && taken.last?.upperBound == 1 << 30)
        #expect(zip(taken, taken.dropFirst()).allSatisfy { $0.upperBound == $1.lowerBound })
    }

    @Test func aSplitDownloadWritesEveryRangeOnceWithoutOverlappingSinkCalls() async throws {
        guard let setup = try await SFTPServerSetup.start() else { return }
        let data = try await offThePool { randomData(8 << 20 + 321, seed: 5) }
        let url = try setup.publish(data, as: "ranges.bin")
        let transport = setup.transport(readSize: 256 << 10, splitThreshold: 1 << 20)
        let sink = SegmentedSink(answer: setup.keyAnswer)
        try await transport.transfer(.forTests(url), into: sink)
        let result = sink.result
        #expect(result.overlappingCalls == 0)
        #expect(sha256Hex(result.data) == sha256Hex(data))
        // The sequential bytes and several segments, each written whole, in order.
        #expect(result.sequential == result.segments.first?.range.lowerBound)
        #expect(result.segments.count >= 3)
        #expect(result.segments.allSatisfy { $0.written == $0.range.count })
        #expect(setup.acceptedLogins == 2)
    }
}

/// A sink that accepts segments, keeps the bytes in memory at their offsets, and counts calls
/// that overlapped another (the contract forbids them).
final class SegmentedSink: TransferSink {
    struct Segment: Sendable {
        var range: Range<Int64>
        var written: Int64 = 0
    }

    struct Result: Sendable {
        var data = Data()
        var sequential: Int64 = 0
        var segments: [Segment] = []
        var overlappingCalls = 0
    }

    private let state = Mutex(Result())
    private let inCall = Atomic<Bool>(false)
    private let answer: @Sendable (AuthChallenge) -> AuthChallengeDisposition

    init(answer: @escaping @Sendable (AuthChallenge) -> AuthChallengeDisposition) { self.answer = answer }

    var result: Result { state.withLock { $0 } }

    /// Runs `body` as one sink call, counting it if another call is in progress.
    private func call<T>(_ body: (inout Result) throws -> T) rethrows -> T {
        if inCall.exchange(true, ordering: .acquiringAndReleasing) {
            state.withLock { $0.overlappingCalls += 1 }
        }
        // No pause is needed to catch an overlap: each call copies up to 256 KiB while the flag is set.
        defer { inCall.store(false, ordering: .releasing) }
        return try state.withLock { try body(&$0) }
    }

    func begin(_ response: TransferResponse) throws {
        call { $0.data = Data(count: Int(response.expectedLength ?? 0)) }
    }

    func write(_ bytes: UnsafeRawBufferPointer) async throws { _ = try tryWrite(bytes) }

    func tryWrite(_ bytes: UnsafeRawBufferPointer) throws -> Bool {
        try call { result in
            let start = Int(result.sequential)
            if let limit = result.segments.first(where: { $0.range.lowerBound >= result.sequential })?.range.lowerBound,
               result.sequential + Int64(bytes.count) > limit {
                throw TransportError(.protocolError, "sequential write past a segment", isRetryable: false)
            }
            result.data.replaceSubrange(start..<start + bytes.count, with: bytes)
            result.sequential += Int64(bytes.count)
        }
        return true
    }

    func whenWritable(_ callback: @escaping @Sendable () -> Void) { callback() }

    func challenge(_ challenge: AuthChallenge) async -> AuthChallengeDisposition { answer(challenge) }

    func segment(_ range: Range<Int64>) throws -> (any TransferSegment)? {
        try call { result in
            if range.lowerBound < result.sequential || result.segments.contains(where: { $0.range.overlaps(range) }) {
                throw TransportError(.protocolError, "bad segment \(range)", isRetryable: false)
            }
            result.segments.append(Segment(range: range))
            result.segments.sort { $0.range.lowerBound < $1.range.lowerBound }
        }
        return Writer(sink: self, range: range)
    }

    fileprivate func take(_ bytes: UnsafeRawBufferPointer, in range: Range<Int64>) throws {
        try call { result in
            guard let index = result.segments.firstIndex(where: { $0.range == range }),
                  result.segments[index].written + Int64(bytes.count) <= Int64(range.count) else {
                throw TransportError(.protocolError, "write past segment \(range)", isRetryable: false)
            }
            let start = Int(range.lowerBound + result.segments[index].written)
            result.data.replaceSubrange(start..<start + bytes.count, with: bytes)
            result.segments[index].written += Int64(bytes.count)
        }
    }

    final class Writer: TransferSegment {
        let sink: SegmentedSink
        let range: Range<Int64>

        init(sink: SegmentedSink, range: Range<Int64>) {
            self.sink = sink
            self.range = range
        }

        func write(_ bytes: UnsafeRawBufferPointer) async throws { try sink.take(bytes, in: range) }
        func tryWrite(_ bytes: UnsafeRawBufferPointer) throws -> Bool {
            try sink.take(bytes, in: range)
            return true
        }
        func whenWritable(_ callback: @escaping @Sendable () -> Void) { callback() }
    }
}
