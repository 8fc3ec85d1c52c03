import Foundation
import GRDB
import Testing
@testable import Paperboy
import PaperboyTesting

/// The aggregate queries behind `status`, `issues` and the badge, against rows generated
/// through the store (no downloads).
@Suite("Library store queries", .timeLimit(.minutes(2)))
struct LibraryStoreQueriesTests {
    let folder = TempFolder()

    /// A store whose queued updates stay queued for a minute unless flushed.
    func makeStore() throws -> LibraryStore {
        try LibraryStore(fileURL: folder.file("library.sqlite"), batchDelay: .seconds(60))
    }

    func addIssue(_ name: String, to store: LibraryStore) throws {
        try store.insertIssue(IssueRecord(name: IssueName(name, door: "test"), date: LibraryDate(stored: Date(timeIntervalSince1970: 1_700_000_000)), addedAt: Date(),
                                          isNew: false, coverPath: nil))
    }

    /// Rows of `issue` in the given states, in that order, `bytes` each on disk of `expected`.
    @discardableResult
    func addAssets(_ states: [PersistedState], to issue: String, in store: LibraryStore, bytes: Int64 = 10,
                   expected: Int64? = 100, retryAt: (Int) -> Date? = { _ in nil }) throws -> [String] {
        var seq = store.nextAssetSeq()
        var records: [AssetRecord] = []
        for (index, state) in states.enumerated() {
            records.append(AssetRecord(
                id: "\(issue)-\(seq)", issueName: issue, seq: seq,
                request: AssetRequest(url: URL(string: "https://example.com/\(issue)/\(index).pdf")!, destinationPath: "\(index).pdf"),
                userInfo: nil, state: state.rawValue, detail: state == .failed ? "HTTP 404" : nil,
                retryAt: state == .retry ? retryAt(index) : nil, attempts: 0, bytesOnDisk: bytes, expectedBytes: expected,
                validator: nil, validatorStrength: nil))
            seq += 1
        }
        try store.insertAssets(records)
        return records.map(\.id)
    }

    @Test func countsPerStatePerIssueAndWaitReasonsComeFromOneQuery() throws {
        let store = try makeStore()
        for name in ["a", "b", "c", "empty"] { try addIssue(name, to: store) }
        let soon = Date(timeIntervalSince1970: 1_800_000_000)
        try addAssets([.delivered, .delivered, .delivered, .failed, .failed, .idle, .idle, .idle, .idle], to: "a", in: store)
        try addAssets([.delivered, .retry, .retry, .queued, .paused, .network, .downloading, .finished, .cancelled], to: "b",
                      in: store, expected: nil, retryAt: { soon.addingTimeInterval(Double(10 - $0)) })
        try addAssets(Array(repeating: .delivered, count: 5), to: "c", in: store, bytes: 100)

        let counts = try store.assetCounts()
        #expect(Set(counts.keys) == ["a", "b", "c"])
        var a = AssetCounts()
        a.delivered = 3
        a.failed = 2
        a.idle = 4
        a.bytesWritten = 90
        a.expectedBytes = 900
        #expect(counts["a"] == a)
        #expect(counts["a"]?.issueStatus == .notDownloaded)

        let b = try #require(counts["b"])
        #expect(b.delivered == 1 && b.waitingForRetry == 2 && b.queued == 1 && b.paused == 1 && b.waitingForNetwork == 1)
        #expect(b.downloading == 1 && b.finished == 1 && b.cancelled == 1 && b.idle == 0 && b.failed == 0)
        #expect(b.waiting == 5 && b.total == 9)
        // The earliest of the two retries (asset 2: soon + 8 s), to the second as dates are stored.
        #expect(b.nextRetry.map { Int($0.timeIntervalSince1970) } == Int(soon.timeIntervalSince1970) + 8)
        // Of unknown size: what they have.
        #expect(b.bytesWritten == 90 && b.expectedBytes == 90)
        #expect(b.issueStatus == .downloading)

        #expect(counts["c"]?.total == 5 && counts["c"]?.issueStatus == .available)
        #expect(try store.assetCounts(issueName: "c") == ["c": counts["c"]!])
        #expect(try store.assetCounts(issueName: "empty").isEmpty)
        #expect(AssetCounts().issueStatus == .notDownloaded)
    }

    @Test func queuedStateChangesAreCountedBeforeTheyAreWritten() throws {
        let store = try makeStore()
        try addIssue("a", to: store)
        try addIssue("b", to: store)
        let ids = try addAssets([.queued, .queued, .downloading], to: "a", in: store)
        try addAssets([.idle], to: "b", in: store)
        var delivered = AssetPatch(id: ids[2])
        delivered.state = .delivered
        var failed = AssetPatch(id: ids[0])
        failed.state = .failed
        var progress = AssetPatch(id: ids[1])
        progress.bytesOnDisk = 50
        for patch in [delivered, failed, progress] { store.submit(patch) }
        // Not written yet (the batch waits a minute): the counts come from the queue.
        let written = try store.pool.read { db in
            try String.fetchAll(db, sql: "SELECT state FROM asset WHERE issueName = 'a' ORDER BY seq")
        }
        #expect(written == ["queued", "queued", "downloading"])

        for counts in [try store.assetCounts()["a"], try store.assetCounts(issueName: "a")["a"]] {
            #expect(counts?.queued == 1 && counts?.failed == 1 && counts?.delivered == 1 && counts?.downloading == 0, "\(String(describing: counts))")
            #expect(counts?.total == 3)
        }
        #expect(try store.assetCounts()["b"]?.idle == 1)
        #expect(try store.assetCounts(issueName: "b")["a"] == nil)
        store.flush()
        #expect(try store.assetCounts()["a"]?.failed == 1)
    }

    @Test func assetsAreReadAPageAtATimeInTheOrderTheyWereAdded() throws {
        let store = try makeStore()
        try addIssue("big", to: store)
        try addIssue("other", to: store)
        let ids = try addAssets(Array(repeating: .idle, count: 2_500), to: "big", in: store)
        try addAssets([.idle], to: "other", in: store)
        var pending = AssetPatch(id: ids[1_700])
        pending.state = .paused
        store.submit(pending)

        var seen: [String] = []
        var pausedSeen: [String] = []
        try store.forEachAsset(issueName: "big") { record in
            seen.append(record.id)
            if record.state == PersistedState.paused.rawValue { pausedSeen.append(record.id) }
        }
        #expect(seen == ids)
        #expect(pausedSeen == [ids[1_700]])

        // Rows whose insertion order is not their seq order (a rebuilt table): still by seq.
        try store.pool.write { db in try db.execute(sql: "UPDATE asset SET seq = 100000 - seq WHERE issueName = 'big'") }
        var reversed: [String] = []
        try store.forEachAsset(issueName: "big", pageSize: 700) { reversed.append($0.id) }
        #expect(reversed == ids.reversed())

        // A damaged library with equal seqs: each row once, none skipped at a page's edge.
        try store.pool.write { db in try db.execute(sql: "UPDATE asset SET seq = 7 WHERE issueName = 'big' AND seq % 5 = 0") }
        var again: [String] = []
        try store.forEachAsset(issueName: "big", pageSize: 3) { again.append($0.id) }
        #expect(again.count == ids.count && Set(again) == Set(ids))
    }

    @Test func issueStatusAndCountsThroughTheLibrary() async throws {
        let root = folder.file("library")
        let library = try Library.open(at: root, transports: TransportRegistry([InMemoryTransport()]), configuration: Library.Configuration.forTests())
        let issue = try await library.addIssue(name: "i", date: Date())
        #expect(try issue.status == .notDownloaded && issue.assetCounts == AssetCounts())
        let store = library.scheduler.store
        try addAssets([.delivered, .delivered], to: "i", in: store)
        #expect(issue.status == .available)
        #expect(try library.assetCountsByIssue()["i"]?.delivered == 2)
        try addAssets([.failed], to: "i", in: store)
        #expect(issue.status == .notDownloaded)
        #expect(try issue.assetCounts.failed == 1 && issue.assetCounts.total == 3)
        await library.close()
    }
}
