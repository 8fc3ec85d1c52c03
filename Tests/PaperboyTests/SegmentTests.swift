import Crypto
import Foundation
import Synchronization
import Testing
@testable import Paperboy
import PaperboyTesting

/// A transport writing the first half of a resource sequentially and the second half through a
/// sink segment, as a transport reading ranges over two connections does.
final class SegmentingTransport: Transport, @unchecked Sendable {
    enum Plan: Sendable {
        /// Both halves complete.
        case complete
        /// The segment completes; the sequential half fails after this many bytes.
        case headFailsAfter(Int)
        /// As `.headFailsAfter`, with an error that may be retried.
        case headFailsRetryablyAfter(Int)
        /// The sequential half completes; the segment fails after this many bytes.
        case segmentFailsAfter(Int)
        /// Asks for bad segments and writes past limits (recording the errors), then completes.
        case probeBadInput
        /// The segment completes, then the sequential half up to this many bytes before the
        /// segment; then waits for ``gate`` before the rest.
        case holdBeforeJoining(Int)
        /// Writes only the bytes the job does not hold (``TransferJob/heldRanges``), as the HTTP
        /// split does: sequentially up to the first held range, the other gaps through segments.
        case skipHeld
        /// As `.holdBeforeJoining`, but once the checkpoints in flight ended, one byte more is
        /// written before the hold: a checkpoint begins after the segment is complete.
        case checkpointBeforeJoining(Int)
    }

    /// Opened by the test to let a `.holdBeforeJoining` transfer go on.
    let gate = CommitGate()
    /// The core's sink of the transfer held by `.holdBeforeJoining`, once it holds.
    let heldSink = Mutex<PartialFileSink?>(nil)

    let data: Data
    let plans: Mutex<[Plan]>
    let offsets = Mutex<[Int64]>([])
    let refusals = Mutex<[TransportError.Code]>([])
    /// The held ranges of each `.skipHeld` job, and the bytes it wrote.
    let held = Mutex<[(ranges: [Range<Int64>], written: Int)]>([])
    let validator = ResourceValidator("v1", strength: .strong)

    init(_ data: Data, plans: [Plan]) {
        self.data = data
        self.plans = Mutex(plans)
    }

    var schemes: Set<String> { ["seg"] }
    var capabilities: TransportCapabilities { [.resume, .validators] }

    func transfer(_ job: TransferJob, into sink: any TransferSink) async throws {
        offsets.withLock { $0.append(job.offset) }
        let plan = plans.withLock { $0.isEmpty ? .complete : $0.removeFirst() }
        let offset = job.validator == validator ? Int(job.offset) : 0
        try sink.begin(TransferResponse(offset: Int64(offset), expectedLength: Int64(data.count), validator: validator))
        let length = Int64(data.count)
        if case .skipHeld = plan {
            let response = TransferResponse(offset: Int64(offset), expectedLength: length, validator: validator)
            let skipped = response.keepsHeldRanges(of: (job.offset, job.validator)) ? job.heldRanges : []
            var position = offset
            var written = 0
            for range in skipped + [length..<length] where Int(range.lowerBound) > position {
                let gap = data[position..<Int(range.lowerBound)]
                if position == offset {
                    try await write(gap, into: sink.write)
                } else {
                    let segment = try #require(try sink.segment(Int64(position)..<range.lowerBound))
                    try await write(gap, into: segment.write)
                }
                written += gap.count
                position = Int(range.upperBound)
            }
            held.withLock { $0.append((job.heldRanges, written)) }
            return
        }
        let middle = offset + (data.count - offset) / 2
        if case .probeBadInput = plan {
            probe { try sink.segment(length..<(length + 10)) }
            probe { try sink.segment(Int64(middle)..<Int64(middle)) }
        }
        guard let segment = try sink.segment(Int64(middle)..<length) else {
            Testing.Issue.record("the core's sink handed out no segment")
            return
        }
        var head = offset
        if case .probeBadInput = plan {
            probe { try sink.segment(Int64(middle - 1)..<Int64(middle + 1)) }
            try await write(data[offset..<(offset + 100_000)], into: sink.write)
            head += 100_000
            probe { try sink.segment(Int64(offset)..<Int64(offset + 10)) }
            // In one call each: a sequential write crossing the segment's start, and a segment
            // write past its end. Nothing of either may land.
            await probeAsync { try await self.writeOnce(self.data[head..<(middle + 1)], into: sink.write) }
            await probeAsync { try await self.writeOnce(self.data[middle...] + Data([0]), into: segment.write) }
        }
        // The segment first, so that its bytes are on disk before the sequential ones reach it.
        switch plan {
        case .segmentFailsAfter(let count):
            try await write(data[middle..<(middle + count)], into: segment.write)
            try await write(data[offset..<middle], into: sink.write)
            throw TransportError(.connectionLost, "second connection dropped")
        case .headFailsAfter(let count), .headFailsRetryablyAfter(let count):
            try await write(data[middle...], into: segment.write)
            try await write(data[offset..<(offset + count)], into: sink.write)
            if case .headFailsRetryablyAfter = plan { throw TransportError(.connectionLost, "first connection dropped", isRetryable: true) }
            throw TransportError(.connectionLost, "first connection dropped", isRetryable: false)
        case .holdBeforeJoining(let short), .checkpointBeforeJoining(let short):
            try await write(data[middle...], into: segment.write)
            var head = middle - short
            try await write(data[offset..<head], into: sink.write)
            if case .checkpointBeforeJoining = plan, let core = sink as? PartialFileSink {
                await core.waitForCheckpoints()
                try await write(data[head..<(head + 1)], into: sink.write)
                head += 1
            }
            heldSink.withLock { $0 = sink as? PartialFileSink }
            await gate.wait()
            try await write(data[head..<middle], into: sink.write)
        case .complete, .probeBadInput, .skipHeld:
            try await write(data[middle...], into: segment.write)
            try await write(data[head..<middle], into: sink.write)
        }
    }

    private func write(_ bytes: Data, into write: (UnsafeRawBufferPointer) async throws -> Void) async throws {
        var start = bytes.startIndex
        while start < bytes.endIndex {
            let end = min(start + 100_000, bytes.endIndex)
            try await writeOnce(bytes[start..<end], into: write)
            start = end
        }
    }

    private func writeOnce(_ bytes: Data, into write: (UnsafeRawBufferPointer) async throws -> Void) async throws {
        let copy = UnsafeMutableRawBufferPointer.allocate(byteCount: bytes.count, alignment: 16)
        defer { copy.deallocate() }
        _ = bytes.copyBytes(to: copy)
        try await write(UnsafeRawBufferPointer(copy))
    }

    private func probe(_ body: () throws -> Any?) {
        do {
            _ = try body()
            refusals.withLock { $0.append(.ioError) }
        } catch {
            refusals.withLock { $0.append((error as? TransportError)?.code ?? .ioError) }
        }
    }

    private func probeAsync(_ body: () async throws -> Void) async {
        do {
            try await body()
            refusals.withLock { $0.append(.ioError) }
        } catch {
            refusals.withLock { $0.append((error as? TransportError)?.code ?? .ioError) }
        }
    }
}

@Suite("Sink segments", .timeLimit(.minutes(2)))
struct SegmentTests {
    let folder = TempFolder()
    var root: URL { folder.file("library") }
    let data = randomData(3 << 20 + 12345)
    var digest: String { SHA256.hash(data: data).map { String(format: "%02x", $0) }.joined() }

    func download(_ transport: SegmentingTransport, attempts: Int = 1, sha256: String? = nil) async throws -> (AssetDownload, RecordingDelegate, Library) {
        let library = try Library.open(at: root, transports: TransportRegistry([transport]), configuration: Library.Configuration.forTests(attempts: attempts))
        let asset = try await library.addIssue(name: "i", date: Date())
            .addAsset(AssetRequest(url: URL(string: "seg://example/file.bin")!, sha256: sha256))
        let delegate = RecordingDelegate()
        try await asset.download(delegate: delegate)
        await delegate.waitForEnd()
        return (asset, delegate, library)
    }

    @Test func segmentBytesLandInPlaceAndTheChecksumIsTakenFromTheFile() async throws {
        let transport = SegmentingTransport(data, plans: [.complete])
        let (_, delegate, library) = try await download(transport, sha256: digest)
        #expect(delegate.keptFiles == [data])
        // Progress counts the segment's bytes too, and ends at the full length.
        let totals = delegate.events.compactMap { event -> Int64? in
            if case .progress(_, let total, _) = event { return total }
            return nil
        }
        #expect(totals.last == Int64(data.count))
        #expect(totals == totals.sorted())
        await library.close()
    }

    /// The SHA-256 is fed from the file while the transfer runs: the sequential bytes written
    /// after a segment began are hashed before the last byte arrives, not read back at the end.
    @Test func theChecksumIsFedWhileSegmentsArrive() async throws {
        let short = 100_000
        let transport = SegmentingTransport(data, plans: [.holdBeforeJoining(short)])
        let library = try Library.open(at: root, transports: TransportRegistry([transport]), configuration: Library.Configuration.forTests(attempts: 1))
        let asset = try await library.addIssue(name: "i", date: Date())
            .addAsset(AssetRequest(url: URL(string: "seg://example/file.bin")!, sha256: digest))
        let delegate = RecordingDelegate()
        try await asset.download(delegate: delegate)
        let head = Int64(data.count / 2 - short)
        try await eventually("the transfer holds", seen: "\(asset.state)") { transport.heldSink.withLock { $0 } != nil }
        let sink = try #require(transport.heldSink.withLock { $0 })
        // Hashed in steps of at most a mebibyte: all but the last step of the written head.
        try await eventually("the hash covers the bytes written without a gap", seen: "\(sink.hashedPrefix) of \(head)") {
            sink.hashedPrefix > head - (1 << 20) && sink.hashedPrefix <= head
        }
        transport.gate.open()
        await delegate.waitForEnd()
        #expect(delegate.keptFiles == [data])
        await library.close()
    }

    @Test func aWrongChecksumIsStillCaught() async throws {
        let transport = SegmentingTransport(data, plans: [.complete])
        let (asset, delegate, library) = try await download(transport, sha256: String(repeating: "0", count: 64))
        #expect(delegate.keptFiles.isEmpty)
        guard case .failed(let message) = asset.state else {
            Testing.Issue.record("expected a failure, got \(asset.state)")
            return
        }
        #expect(message.contains("SHA-256"))
        await library.close()
    }

    @Test func aFailureRecordsOnlyTheBytesBeforeTheFirstGap() async throws {
        let cut = 700_000
        let transport = SegmentingTransport(data, plans: [.headFailsAfter(cut)])
        let (asset, _, library) = try await download(transport)
        guard case .failed = asset.state else {
            Testing.Issue.record("expected a failure, got \(asset.state)")
            return
        }
        // The whole second half was written, but after a gap: recorded apart from the bytes to
        // continue from (a transport that does not skip it, as this one, writes it again).
        #expect(library.scheduler.store.asset(id: asset.identifier)?.bytesOnDisk == Int64(cut))
        let id = asset.identifier
        await library.close()

        // Reopened as after a crash: the download continues from the gap, and is intact.
        let reopened = try Library.open(at: root, transports: TransportRegistry([transport]), configuration: Library.Configuration.forTests())
        let again = try #require(await reopened.asset(identifier: id))
        let delegate = RecordingDelegate()
        try await again.download(delegate: delegate)
        await delegate.waitForEnd()
        #expect(transport.offsets.withLock { $0 } == [0, Int64(cut)])
        #expect(delegate.keptFiles == [data])
        await reopened.close()
    }

    /// The segment written past the gap is recorded with the bytes before it: the next transfer
    /// is told it is held, writes only the gap, and the SHA-256 reads the held bytes back.
    @Test func aFailureRecordsTheSegmentPastTheGapAndTheResumeSkipsIt() async throws {
        let cut = 700_000
        let transport = SegmentingTransport(data, plans: [.headFailsAfter(cut), .skipHeld])
        let (asset, _, library) = try await download(transport, sha256: digest)
        guard case .failed = asset.state else {
            Testing.Issue.record("expected a failure, got \(asset.state)")
            return
        }
        let id = asset.identifier
        await library.close()

        let reopened = try Library.open(at: root, transports: TransportRegistry([transport]), configuration: Library.Configuration.forTests())
        let delegate = RecordingDelegate()
        try await #require(await reopened.asset(identifier: id)).download(delegate: delegate)
        await delegate.waitForEnd()
        await reopened.close()

        let middle = data.count / 2
        #expect(transport.offsets.withLock { $0 } == [0, Int64(cut)])
        let resumed = transport.held.withLock { $0 }
        #expect(resumed.map(\.ranges) == [[Int64(middle)..<Int64(data.count)]])
        #expect(resumed.map(\.written) == [middle - cut])
        #expect(delegate.keptFiles == [data])
        // The resume counts the held bytes as there already.
        #expect(delegate.events.contains { event in
            if case .resumed(let total, _) = event { return total == Int64(cut + data.count - middle) }
            return false
        }, "\(delegate.events.prefix(3))")
    }

    /// The progress count of a split download that stopped is every byte it kept: the bytes
    /// without a gap and the pieces recorded past them, as it showed while it ran, whether the
    /// library still holds the asset or reads its row. It showed the gap-free prefix alone before.
    @Test func aStoppedDownloadCountsTheBytesOfItsRecordedPieces() async throws {
        let cut = 700_000
        let transport = SegmentingTransport(data, plans: [.headFailsAfter(cut)])
        let (asset, _, library) = try await download(transport)
        guard case .failed = asset.state else {
            Testing.Issue.record("expected a failure, got \(asset.state)")
            return
        }
        let kept = Int64(cut + data.count - data.count / 2)
        #expect(asset.totalBytesWritten == kept)
        let id = asset.identifier
        await library.close()

        let reopened = try Library.open(at: root, transports: TransportRegistry([transport]), configuration: Library.Configuration.forTests())
        let again = try #require(await reopened.asset(identifier: id))
        #expect(again.totalBytesWritten == kept)
        #expect(try await again.status().totalBytesWritten == kept)
        var listed: [Int64] = []
        try again.issue?.forEachAssetListing { listed.append($0.totalBytesWritten) }
        #expect(listed == [kept])
        await reopened.close()
    }

    /// An attempt whose gap-free prefix did not move but whose recorded pieces grew made
    /// progress: with one attempt allowed it is retried (the count starts afresh, as after
    /// prefix progress), and the retry fetches only the rest. Without counting the pieces, the
    /// asset failed here.
    @Test func anAttemptThatOnlyGrewItsPiecesIsRetried() async throws {
        let transport = SegmentingTransport(data, plans: [.headFailsRetryablyAfter(0), .skipHeld])
        let (asset, delegate, library) = try await download(transport, attempts: 1, sha256: digest)
        let state = asset.state
        await library.close()
        #expect(delegate.keptFiles == [data], "\(state)")
        #expect(transport.offsets.withLock { $0 } == [0, 0])
        let middle = data.count / 2
        #expect(transport.held.withLock { $0 }.map(\.ranges) == [[Int64(middle)..<Int64(data.count)]])
    }

    /// A checkpoint, not only a stop, records the segment past the gap (after the sync): what a
    /// kill -9 leaves to resume from. A finished file holds none any more.
    @Test func aCheckpointRecordsTheSegmentPastTheGap() async throws {
        let transport = SegmentingTransport(data, plans: [.checkpointBeforeJoining(1 << 20)])
        var configuration = Library.Configuration.forTests(attempts: 1)
        configuration.checkpointInterval = .zero
        let library = try Library.open(at: root, transports: TransportRegistry([transport]), configuration: configuration)
        let asset = try await library.addIssue(name: "i", date: Date())
            .addAsset(AssetRequest(url: URL(string: "seg://example/file.bin")!, sha256: digest))
        let delegate = RecordingDelegate()
        try await asset.download(delegate: delegate)
        try await eventually("the transfer holds", seen: "\(asset.state)") { transport.heldSink.withLock { $0 } != nil }
        let middle = Int64(data.count / 2)
        let store = library.scheduler.store
        try await eventually("a checkpoint recorded the segment", seen: "\(String(describing: store.asset(id: asset.identifier)?.segments))") {
            store.asset(id: asset.identifier)?.segments == RecordedSegments(coalescing: [middle..<Int64(data.count)])
        }
        #expect((store.asset(id: asset.identifier)?.bytesOnDisk ?? .max) < middle)
        transport.gate.open()
        await delegate.waitForEnd()
        #expect(delegate.keptFiles == [data])
        #expect(store.asset(id: asset.identifier)?.segments == nil)
        await library.close()
    }

    @Test func aSegmentJoinedToTheSequentialBytesCountsUpToItsLastByte() async throws {
        let count = 300_000
        let transport = SegmentingTransport(data, plans: [.segmentFailsAfter(count), .complete])
        let (asset, delegate, library) = try await download(transport, attempts: 2, sha256: digest)
        #expect(delegate.keptFiles == [data])
        #expect(transport.offsets.withLock { $0 } == [0, Int64(data.count / 2 + count)])
        #expect(asset.totalBytesWritten == Int64(data.count))
        await library.close()
    }

    @Test func badSegmentsAndWritesPastALimitAreRefused() async throws {
        let transport = SegmentingTransport(data, plans: [.probeBadInput])
        let (_, delegate, library) = try await download(transport, sha256: digest)
        // Past the end, empty, overlapping, before the written bytes; then the two writes.
        #expect(transport.refusals.withLock { $0 } == Array(repeating: .protocolError, count: 6))
        // The refused calls changed nothing: the download completes intact.
        #expect(delegate.keptFiles == [data])
        await library.close()
    }
}

/// The ranges a transfer wrote through segments (``SegmentLedger``).
@Suite("Segment ledger")
struct SegmentLedgerTests {
    /// A split download asks for hundreds of segments: the complete ones that touch are one
    /// entry, so that each write's look through the ledger stays short.
    @Test func completeSegmentsThatTouchAreOneEntry() {
        var ledger = SegmentLedger()
        for start in stride(from: Int64(100), to: 10_100, by: 100) { ledger.add(start..<start + 100) }
        ledger.add(20_000..<20_100)
        #expect(ledger.entries.count == 101)
        // Written out of order, the last one but one last: one entry from 100 on, whatever the order.
        for index in (0..<100).reversed() where index != 98 { ledger.record(100, in: ledger.entries.firstIndex { $0.range.lowerBound == 100 + Int64(index) * 100 }!) }
        #expect(ledger.entries.count == 4)
        ledger.record(60, in: ledger.entries.firstIndex { $0.range.lowerBound == 9_900 }!)
        #expect(ledger.entries.count == 4, "a segment still under way joins nothing")
        ledger.record(40, in: ledger.entries.firstIndex { $0.range.lowerBound == 9_900 }!)
        #expect(ledger.entries.map(\.range) == [100..<10_100, 20_000..<20_100])
        #expect(ledger.contiguousEnd(from: 100) == 10_100)
        #expect(ledger.recordable(from: 100).ranges == [100..<10_100])
        #expect(ledger.absorb(into: 100) == 10_100 && ledger.bytes == 0)
    }
}

@Suite("Gather buffers", .timeLimit(.minutes(2)))
struct GatherBufferPoolTests {
    @Test func aBufferGivenBackIsHandedOutAgain() {
        let pool = GatherBufferPool(kept: 2)
        let first = pool.take(count: 1000)
        #expect(first.count == 1000)
        first.storeBytes(of: 0xABCD, as: UInt32.self)
        pool.give(first)
        #expect(pool.freeCount == 1)
        let again = pool.take(count: PartialFileSink.gatherLimit)
        #expect(again.baseAddress == first.baseAddress)
        #expect(again.count == PartialFileSink.gatherLimit)
        #expect(pool.freeCount == 0)
        pool.give(again)
    }

    @Test func atMostKeptBuffersWait() {
        let pool = GatherBufferPool(kept: 2)
        let buffers = (0..<5).map { _ in pool.take(count: 64 << 10) }
        #expect(Set(buffers.map(\.baseAddress)).count == 5)
        for buffer in buffers { pool.give(buffer) }
        #expect(pool.freeCount == 2)
    }
}
