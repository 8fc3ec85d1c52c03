import Foundation
import GRDB
import Testing
@testable import Paperboy
import PaperboyTesting

/// `paperboy status` lists assets from the columns it prints (``AssetListing``) instead of
/// decoding every request: it must read every row exactly as ``AssetStatus`` does, unusual and
/// damaged rows included, and a library that cannot be read must say so, not list nothing.
@Suite("Asset listings", .timeLimit(.minutes(2)))
struct AssetListingTests {
    let folder = TempFolder()

    /// Rows of every kind a listing meets, read both ways.
    @Test func aListingReadsEveryRowAsTheFullStatusDoes() async throws {
        let library = try Library.open(at: folder.file("lib"), transports: TransportRegistry([InMemoryTransport()]),
                                       configuration: Library.Configuration.forTests())
        let issue = try await library.addIssue(name: "i", date: Date())
        let urls = [
            "https://user@example.com/a.pdf", "https://example.com/a%20b.pdf", "HTTPS://Example.com/c.pdf",
            "file:///tmp/plain.txt", "file:///tmp/a%20b.txt", "file:///tmp/dir/", "file://localhost/tmp/x.txt",
            "FILE:///tmp/upper.txt", "sftp://me@host:2222/x", "https://example.com/q?x=1#f", "file:///tmp/q?x",
        ]
        var requests = urls.enumerated().map { index, text in
            (AssetRequest(url: URL(string: text)!, destinationPath: "f\(index)"), JSONValue?.none)
        }
        requests.append((AssetRequest(url: URL(string: "https://example.com/h")!, headers: ["X-A": "1"], destinationPath: "headers"), nil))
        requests.append((AssetRequest(url: URL(string: "https://example.com/u.zip")!, destinationPath: "unpacked", unpack: .zip), nil))
        requests.append((AssetRequest(url: URL(string: "https://example.com/none")!), nil))
        // Options (a credential's CA file), then headers and options that are damaged below.
        requests.append((AssetRequest(url: URL(string: "https://example.com/o")!, destinationPath: "options", options: ["ca_file": "/ca.pem"]), nil))
        requests.append((AssetRequest(url: URL(string: "https://example.com/bh")!, destinationPath: "bad-headers"), nil))
        requests.append((AssetRequest(url: URL(string: "https://example.com/bo")!, destinationPath: "bad-options"), nil))
        let assets = try await issue.addAssets(requests, downloading: false)
        let store = library.scheduler.store
        // A password (refused now, held by an older row), failed, waiting to retry, damaged (a
        // URL that does not parse, a number, the migration's marker), and one with an update not
        // yet written.
        try await store.pool.write { db in
            try db.execute(sql: "UPDATE asset SET url = 'https://user:secret@example.com/a.pdf' WHERE id = ?", arguments: [assets[0].identifier])
            try db.execute(sql: "UPDATE asset SET state = 'failed', detail = 'HTTP 404', attempts = 2 WHERE id = ?", arguments: [assets[1].identifier])
            try db.execute(sql: "UPDATE asset SET state = 'retry', retryAt = '2030-01-02 03:04:05.000', attempts = 1 WHERE id = ?",
                           arguments: [assets[2].identifier])
            try db.execute(sql: "UPDATE asset SET url = 'not a url' WHERE id = ?", arguments: [assets[3].identifier])
            try db.execute(sql: "UPDATE asset SET url = 42 WHERE id = ?", arguments: [assets[4].identifier])
            try db.execute(sql: "UPDATE asset SET url = ? WHERE id = ?", arguments: [AssetRecord.unreadableURL.absoluteString, assets[5].identifier])
            try db.execute(sql: "UPDATE asset SET state = 'bogus', bytesOnDisk = -5, expectedBytes = -1 WHERE id = ?", arguments: [assets[6].identifier])
            try db.execute(sql: "UPDATE asset SET headers = '{\"X-A\": 1' WHERE destinationPath = 'bad-headers'")
            try db.execute(sql: "UPDATE asset SET options = '[\"ca_file\"]' WHERE destinationPath = 'bad-options'")
        }
        // Well-formed options are read from the listing's columns; damaged ones in full.
        let plain = try await store.pool.read { db in
            try Row.fetchAll(db, sql: "SELECT \(AssetListing.columnNames.joined(separator: ", ")) FROM asset WHERE destinationPath IN ('options', 'bad-headers', 'bad-options') ORDER BY seq")
                .map { try AssetListing(plainRow: $0, now: Date()) != nil }
        }
        #expect(plain == [true, false, false])
        var patch = AssetPatch(id: assets[7].identifier)
        patch.state = .paused
        patch.bytesOnDisk = 77
        store.submit(patch)

        var statuses: [AssetStatus] = []
        try issue.forEachAssetStatus { statuses.append($0) }
        var listings: [AssetListing] = []
        try issue.forEachAssetListing { listings.append($0) }
        #expect(listings.count == requests.count && statuses.count == requests.count)
        for (listing, status) in zip(listings, statuses) {
            #expect(listing.identifier == status.identifier)
            #expect(listing.redactedURLString == status.request.url.redactedString, "\(status.request.url)")
            #expect(listing.destinationPath == status.request.destinationPath)
            #expect(listing.state == status.state, "\(status.request.url)")
            #expect(listing.totalBytesWritten == status.totalBytesWritten)
            #expect(listing.expectedTotalBytes == status.expectedTotalBytes)
            #expect(listing.attempts == status.attempts)
        }
        #expect(listings[0].redactedURLString == "https://example.com/a.pdf")
        #expect(listings[3].state.name == "failed" && listings[4].state.name == "failed" && listings[5].state.name == "failed")
        #expect(listings[7].state == .waiting(.pausedByApp) && listings[7].totalBytesWritten == 77)
        #expect(listings.suffix(2).map(\.state.name) == ["failed", "failed"], "damaged headers and options read as damaged")
        await library.close()
    }

    /// A damaged schema: the reads behind `status`, `issues` and the activity counts fail with
    /// the database's error instead of answering "no assets".
    @Test func aLibraryThatCannotBeReadThrowsInsteadOfListingNothing() async throws {
        let library = try Library.open(at: folder.file("lib"), transports: TransportRegistry([InMemoryTransport()]),
                                       configuration: Library.Configuration.forTests())
        let issue = try await library.addIssue(name: "i", date: Date())
        _ = try await issue.addAssets([(AssetRequest(url: URL(string: "https://example.com/a")!), nil)], downloading: false)
        try await library.scheduler.store.pool.write { db in try db.execute(sql: "ALTER TABLE asset RENAME COLUMN state TO damaged") }

        func isStorageError(_ error: any Error) -> Bool {
            guard let error = error as? LibraryError else { return false }
            return error.code == .storage && error.message.contains("no such column")
                && error.message.contains(folder.file("lib").appendingPathComponent("library.sqlite").path)
        }
        #expect(performing: { try issue.forEachAssetListing { _ in } }, throws: isStorageError)
        #expect(performing: { try issue.forEachAssetStatus { _ in } }, throws: isStorageError)
        #expect(performing: { _ = try issue.assetStatuses }, throws: isStorageError)
        #expect(performing: { _ = try issue.assetCounts }, throws: isStorageError)
        #expect(performing: { _ = try library.assetCountsByIssue() }, throws: isStorageError)
        #expect(performing: { _ = try library.activity }, throws: isStorageError)
        await library.close()
    }
}
