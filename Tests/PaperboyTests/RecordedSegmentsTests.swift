import Foundation
import Testing
@testable import Paperboy
import PaperboyTesting

/// The ranges a split transfer records past its bytes without a gap (``RecordedSegments``): how
/// they are joined, bounded, stored, trusted, and forgotten.
@Suite("Recorded segments", .timeLimit(.minutes(1)))
struct RecordedSegmentsTests {
    let folder = TempFolder()

    @Test func adjacentAndOverlappingRangesAreJoinedAndEmptyOnesLeftOut() {
        let held = RecordedSegments(coalescing: [300..<400, 100..<200, 200..<250, 240..<260, 500..<500])
        #expect(held.ranges == [100..<260, 300..<400])
        #expect(held.bytes == 260)
    }

    @Test func atMostTheLimitAreKeptTheLargestFirst() {
        let many = (0..<Int64(RecordedSegments.limit + 5)).map { index in index * 100..<index * 100 + 10 + index }
        let held = RecordedSegments(coalescing: many)
        #expect(held.ranges.count == RecordedSegments.limit)
        // The five smallest (the first five) are left out; the order stays that of the file.
        #expect(held.ranges.first == 500..<515)
        #expect(held.ranges == held.ranges.sorted { $0.lowerBound < $1.lowerBound })
    }

    @Test func theStoredFormReadsBackAndADamagedOneReadsAsNone() {
        let held = RecordedSegments(coalescing: [10..<20, 40..<90])
        #expect(held.stored == "10-20,40-90")
        #expect(RecordedSegments(stored: held.stored) == held)
        #expect(RecordedSegments(stored: "10-5") == nil)
        #expect(RecordedSegments(stored: "x-9") == nil)
        #expect(RecordedSegments(stored: "-3-9") == nil)
    }

    @Test func onlyRangesPastTheOffsetAndWithinTheFileAreTrusted() {
        let held = RecordedSegments(coalescing: [0..<10, 20..<30, 40..<50, 60..<70])
        #expect(held.trusted(after: 10, within: 55).ranges == [20..<30, 40..<50])
    }

    /// A record of bytes on disk or of a validator that does not say which ranges are held
    /// forgets them (a truncation, another version, a cancel); any other record keeps them.
    @Test func aPatchOfBytesOrValidatorWithoutSegmentsForgetsThem() throws {
        let store = try LibraryStore(fileURL: folder.file("library.sqlite"))
        try store.insertIssue(IssueRecord(name: IssueName("i", door: "test"), date: LibraryDate(stored: Date()), addedAt: Date(),
                                          isNew: false, coverPath: nil))
        try store.insertAssets([AssetRecord(
            id: "a", issueName: "i", seq: 0, request: AssetRequest(url: URL(string: "mem://example/a")!), userInfo: nil,
            state: PersistedState.downloading.rawValue, detail: nil, retryAt: nil, attempts: 0, bytesOnDisk: 0, expectedBytes: nil,
            validator: nil, validatorStrength: nil)])
        let held = RecordedSegments(coalescing: [100..<200])
        func stored() throws -> RecordedSegments? { try store.pool.read { db in try AssetRecord.fetchOne(db, key: "a") }?.segments }

        var checkpoint = AssetPatch(id: "a")
        checkpoint.bytesOnDisk = 50
        checkpoint.validator = .some(ResourceValidator("v1", strength: .strong))
        checkpoint.segments = .some(held)
        store.submit(checkpoint)
        #expect(store.flush() == nil)
        #expect(try stored() == held)

        var paused = AssetPatch(id: "a")
        paused.state = .paused
        paused.checkpointBoot = .some(nil)
        store.submit(paused)
        #expect(store.flush() == nil)
        #expect(try stored() == held)

        var otherVersion = AssetPatch(id: "a")
        otherVersion.validator = .some(ResourceValidator("v2", strength: .strong))
        store.submit(otherVersion)
        #expect(store.flush() == nil)
        #expect(try stored() == nil)

        // Folded into one batch, the later truncation wins over the earlier segments.
        store.submit(checkpoint)
        var truncated = AssetPatch(id: "a")
        truncated.bytesOnDisk = 0
        store.submit(truncated)
        #expect(store.flush() == nil)
        #expect(try stored() == nil)
    }
}
