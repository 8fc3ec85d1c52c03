import Foundation
import Testing
@testable import Paperboy
import PaperboyTesting

/// Updates the database refuses are retried, never dropped, and never reported as recorded.
/// The failures are real SQLite errors, raised by a trigger the test installs.
@Suite("Library store", .timeLimit(.minutes(2)))
struct LibraryStoreTests {
    let folder = TempFolder()
    var root: URL { folder.file("library") }
    let data = randomData(3 << 20)

    func open(_ transport: InMemoryTransport = InMemoryTransport()) throws -> Library {
        try Library.open(at: root, transports: TransportRegistry([transport]), configuration: Library.Configuration.forTests(attempts: 1))
    }

    /// Makes every update of an asset row fail while `meta.fail` is set (and `condition` holds).
    func failUpdates(_ library: Library, when condition: String = "1") async throws {
        try await library.scheduler.store.pool.write { db in
            try db.execute(sql: "INSERT INTO meta (key, value) VALUES ('fail', '1')")
            try db.execute(sql: """
                CREATE TRIGGER injected_failure BEFORE UPDATE ON asset
                WHEN EXISTS (SELECT 1 FROM meta WHERE key = 'fail') AND (\(condition))
                BEGIN SELECT RAISE(ABORT, 'injected: disk I/O error'); END
                """)
        }
    }

    func stored(_ library: Library, _ id: String) async throws -> AssetRecord? {
        try await library.scheduler.store.pool.read { db in try AssetRecord.fetchOne(db, key: id) }
    }

    /// One timed write at a time: a write of another kind in between (a flush, a write for
    /// waiters) leaves the armed one to take what comes next, instead of arming another (each a
    /// transaction more in a sync of many small files), and what comes next is still written
    /// within the batch delay without anyone asking.
    @Test func aWriteInBetweenDoesNotArmASecondTimedWrite() async throws {
        let store = try LibraryStore(fileURL: folder.file("library.sqlite"), batchDelay: .milliseconds(200))
        try store.insertIssue(IssueRecord(name: IssueName("i", door: "test"), date: LibraryDate(stored: Date()), addedAt: Date(),
                                          isNew: false, coverPath: nil))
        let ids = ["a", "b", "c"]
        try store.insertAssets(ids.enumerated().map { index, id in
            AssetRecord(id: id, issueName: "i", seq: Int64(index), request: AssetRequest(url: URL(string: "mem://example/\(id)")!),
                        userInfo: nil, state: PersistedState.queued.rawValue, detail: nil, retryAt: nil, attempts: 0,
                        bytesOnDisk: 0, expectedBytes: nil, validator: nil, validatorStrength: nil)
        })
        for (index, id) in ids.enumerated() {
            var patch = AssetPatch(id: id)
            patch.bytesOnDisk = 100
            store.submit(patch)
            if index < ids.count - 1 { #expect(store.flush() == nil) }
        }
        #expect(store.armedTimedWrites.load(ordering: .relaxed) == 1)
        // Nobody flushes the last one: the timer armed first writes it.
        try await eventually("the last update was committed by the armed write") {
            (try? store.pool.read { db in try AssetRecord.fetchOne(db, key: "c") })??.bytesOnDisk == 100
        }
        #expect(store.armedTimedWrites.load(ordering: .relaxed) == 1)
    }

    @Test func aFailedBatchIsTriedAgainWithItsUpdates() async throws {
        let library = try open()
        let asset = try await library.addIssue(name: "i", date: Date()).addAsset(AssetRequest(url: URL(string: "mem://example/a")!))
        try await failUpdates(library)
        var patch = AssetPatch(id: asset.identifier)
        patch.bytesOnDisk = 1234
        patch.state = .paused
        library.scheduler.store.submit(patch)
        let store = library.scheduler.store
        try await eventually("the first commit failed") { store.failedCommits.load(ordering: .relaxed) > 0 }
        var later = AssetPatch(id: asset.identifier)
        later.bytesOnDisk = 5678
        library.scheduler.store.submit(later)
        try await library.scheduler.store.pool.write { db in try db.execute(sql: "DELETE FROM meta WHERE key = 'fail'") }
        // Written by a retry, the first update merged under the later one.
        var record: AssetRecord?
        try await eventually("the updates written by a retry", seen: "\(String(describing: record))") {
            record = try await stored(library, asset.identifier)
            return record?.bytesOnDisk == 5678
        }
        #expect(record?.state == PersistedState.paused.rawValue)
        await library.close()
    }

    @Test func aTransferWhoseProgressCannotBeRecordedStopsAndFails() async throws {
        let transport = InMemoryTransport(chunkSize: 64 * 1024)
        let url = transport.serve(data, at: "stalls.bin", script: [.stallAfter(1 << 20)])
        let library = try open(transport)
        let asset = try await library.addIssue(name: "i", date: Date()).addAsset(AssetRequest(url: url))
        try await failUpdates(library)
        let delegate = RecordingDelegate()
        // `download()` returns once its change is committed: here it says why it cannot be.
        do {
            try await asset.download(delegate: delegate)
            Issue.record("download() returned although its change could not be recorded")
        } catch {
            #expect(error.code == .storage && error.message.contains("cannot record the progress of asset \(asset.identifier)"), "\(error)")
        }
        await delegate.waitForEnd()
        let failure = delegate.events.compactMap { event -> String? in
            if case .failed(let code, let message) = event, code == "storage" { return message } else { return nil }
        }.first
        #expect(failure?.contains("cannot record the progress of asset \(asset.identifier) in library database \(root.path)/library.sqlite") == true, "\(delegate.events)")
        #expect(failure?.contains("injected: disk I/O error") == true)
        guard case .failed(let message) = asset.state else {
            Issue.record("expected a failed asset, got \(asset.state)")
            return
        }
        #expect(message.contains("cannot record the progress"))
        await library.close()
    }

    @Test func aDeliveryThatCannotBeRecordedIsNotReportedDelivered() async throws {
        let transport = InMemoryTransport()
        let url = transport.serve(data, at: "a.bin")
        var library = try open(transport)
        let asset = try await library.addIssue(name: "i", date: Date()).addAsset(AssetRequest(url: url, destinationPath: "a.bin"))
        try await failUpdates(library, when: "NEW.state = 'delivered'")
        try await asset.download()
        await library.waitUntilIdle()
        guard case .failed(let message) = asset.state else {
            Issue.record("reported \(asset.state) although 'delivered' could not be recorded")
            await library.close()
            return
        }
        #expect(message.contains("asset \(asset.identifier) is in its issue folder but cannot be recorded as delivered"), "\(message)")
        #expect(try await stored(library, asset.identifier)?.state != PersistedState.delivered.rawValue)
        #expect(try Bytes(Data(contentsOf: root.appendingPathComponent("Issues/i/a.bin"))) == Bytes(data))
        try await library.scheduler.store.pool.write { db in try db.execute(sql: "DELETE FROM meta WHERE key = 'fail'") }
        await library.close()
        // The next open finds the file in place and records it.
        library = try open(transport)
        #expect(try await library.asset(identifier: asset.identifier)?.state == .delivered)
        await library.close()
    }
}
