import Foundation
import GRDB
import Testing
@testable import Paperboy
import PaperboyTesting

/// A damaged or hostile library database: numbers out of range read as safe values, never a trap.
@Suite("Library rows out of range", .timeLimit(.minutes(2)))
struct HostileRowTests {
    let folder = TempFolder()
    var root: URL { folder.file("library") }

    func open() throws -> Library {
        try Library.open(at: root, transports: TransportRegistry([InMemoryTransport()]), configuration: Library.Configuration.forTests())
    }

    /// A count above 2^62 (``ByteCount``) in a row reads as absent, as a negative one does: the
    /// store hands on only counts its doors could have written.
    @Test func countsAndRatesAboveTwoToThe62ReadAsAbsent() async throws {
        var library = try open()
        let issue = try await library.addIssue(name: "i", date: Date())
        let added = try await issue.addAsset(AssetRequest(url: URL(fileURLWithPath: "/nowhere/a"), destinationPath: "a", maxBytesPerSecond: 5))
        try await library.scheduler.store.pool.write { db in
            try db.execute(sql: """
                UPDATE asset SET bytesOnDisk = 4611686018427387905, expectedBytes = 4611686018427387905,
                  maxBytesPerSecond = 4611686018427387905 WHERE id = ?
                """, arguments: [added.identifier])
        }
        await library.close()
        library = try open()
        let record = try #require(library.scheduler.store.asset(id: added.identifier))
        #expect(record.bytesOnDisk == 0)
        #expect(record.expectedBytes == nil)
        #expect(record.request.maxBytesPerSecond == nil)
        await library.close()
    }

    @Test func hugeNegativeAndNonNumericValuesInAnAssetRowOpenWithoutATrap() async throws {
        var library = try open()
        let issue = try await library.addIssue(name: "i", date: Date())
        let request = AssetRequest(url: URL(fileURLWithPath: "/nowhere/a"), sha256: String(repeating: "a", count: 64), destinationPath: "a")
        let added = try await issue.addAsset(request)
        let other = try await issue.addAsset(AssetRequest(url: URL(fileURLWithPath: "/nowhere/b"), destinationPath: "b"))
        try await library.scheduler.store.pool.write { db in
            try db.execute(sql: """
                UPDATE asset SET state = 'retry', attempts = 9223372036854775807, bytesOnDisk = -5, expectedBytes = -7,
                  retryAt = 1e300, seq = 9223372036854775807 WHERE id = ?
                """, arguments: [added.identifier])
            // Infinity (SQLite keeps it as a REAL), text where numbers belong.
            try db.execute(sql: """
                UPDATE asset SET state = 'retry', attempts = 'many', bytesOnDisk = 1e400, expectedBytes = 'x', retryAt = -1e400
                WHERE id = ?
                """, arguments: [other.identifier])
            try db.execute(sql: "UPDATE issue SET isNew = 'yes' WHERE name = 'i'")
        }
        await library.close()

        library = try open()
        let record = try #require(library.scheduler.store.asset(id: added.identifier))
        #expect(record.bytesOnDisk == 0)
        #expect(record.expectedBytes == nil)
        // Clamped, then perhaps counted up by the retries the reopened library made since.
        #expect((AssetRecord.maxStoredAttempts...AssetRecord.maxStoredAttempts + 5).contains(Int64(record.attempts)))
        let damaged = try #require(library.scheduler.store.asset(id: other.identifier))
        #expect((0...5).contains(damaged.attempts))
        #expect(damaged.bytesOnDisk == 0)
        #expect(damaged.expectedBytes == nil)
        let reopened = try #require(await library.issue(named: "i"))
        #expect(reopened.assets.count == 2)
        for asset in reopened.assets {
            if case .waiting(.retry(let until, let attempt)) = asset.state {
                #expect(attempt <= Int(AssetRecord.maxStoredAttempts) + 6)
                #expect(until.timeIntervalSinceNow < 86_400 * 2)
            }
        }
        // A later asset still gets a sequence number after the huge one.
        let later = try await reopened.addAsset(AssetRequest(url: URL(fileURLWithPath: "/nowhere/c"), destinationPath: "c"))
        #expect(try #require(library.scheduler.store.asset(id: later.identifier)).seq > 0)
        await library.close()
    }

    /// Issue 26, case 2: one unreadable row once hid every issue. Each damaged row is left out of
    /// what is read and named in ``Library/damagedRows``; everything else reads as before.
    @Test func oneDamagedRowHidesNothingElseAndIsNamed() async throws {
        var library = try open()
        for (name, day) in [("a", 1.0), ("b", 2.0), ("c", 3.0)] {
            let issue = try await library.addIssue(name: name, date: Date(timeIntervalSince1970: 1_790_000_000 + day * 86_400))
            try await issue.addAsset(AssetRequest(url: URL(fileURLWithPath: "/nowhere/\(name)"), destinationPath: "x"))
        }
        try await library.scheduler.store.pool.write { db in
            try db.execute(sql: "UPDATE issue SET date = '10000-01-01 00:00:00.000' WHERE name = 'b'")
            try db.execute(sql: "UPDATE issue SET addedAt = X'00ff' WHERE name = 'a'")
            try db.execute(sql: "UPDATE asset SET state = 'bogus' WHERE issueName = 'c'")
        }
        await library.close()

        library = try open()
        #expect(library.issues.map(\.name) == ["c"])
        #expect(try await library.issue(named: "a") == nil)
        let c = try #require(await library.issue(named: "c"))
        #expect(c.assets.count == 1)
        let asset = try #require(c.assets.first)
        guard case .failed(let message) = asset.state else {
            Testing.Issue.record("a damaged state reads as failed, got \(asset.state)")
            return
        }
        #expect(message.contains("its state 'bogus' cannot be read"), "\(message)")
        #expect(c.status == .notDownloaded)
        var listed: [AssetListing] = []
        try c.forEachAssetListing { listed.append($0) }
        #expect(listed.map(\.identifier) == [asset.identifier])

        let damaged = try library.damagedRows
        #expect(damaged.map(\.table) == [.issue, .issue, .asset])
        #expect(damaged.map(\.key) == ["a", "b", asset.identifier])
        #expect(damaged.map(\.column) == ["addedAt", "date", "state"])
        #expect(damaged.map(\.value) == ["X'00FF'", "'10000-01-01 00:00:00.000'", "'bogus'"])
        #expect(damaged[1].removal.hasPrefix("DELETE FROM issue WHERE rowid = "))
        #expect(damaged[2].removal.hasPrefix("DELETE FROM asset WHERE rowid = "))
        #expect(damaged[1].description.hasPrefix("issue 'b': its date '10000-01-01 00:00:00.000' cannot be read; remove the row with: sqlite3 "))
        // Adding an issue under a damaged row's name says so, instead of a decoding error.
        let error = try await #require(throws: LibraryError.self) { try await library.addIssue(name: "b", date: Date()) }
        #expect(error.message.contains("issue 'b': its date '10000-01-01 00:00:00.000' cannot be read"), "\(error.message)")
        // Purging passes over what it cannot read.
        #expect(try await library.purge(keep: 0) == [])

        // Removed as told, the rest reads clean.
        try await library.scheduler.store.pool.write { db in
            for row in damaged where row.table == .issue { try db.execute(sql: row.removal) }
        }
        #expect(try library.damagedRows.map(\.column) == ["state"])
        await library.close()
    }

    /// A row's issue name and destination path become paths: read back, they keep the rules they
    /// were written under (``IssueName``, ``RelativePath``). A destination `../../../x` or an issue named `..`
    /// once delivered outside the issue folder, and purging that issue removed the library.
    @Test func aStoredNameOrPathLeavingTheIssueFolderIsDamagedAndNothingIsWrittenOutside() async throws {
        let transport = InMemoryTransport()
        let openLibrary = { try Library.open(at: root, transports: TransportRegistry([transport]), configuration: .forTests()) }
        var library = try openLibrary()
        let kept = try await library.addIssue(name: "kept", date: Date(timeIntervalSince1970: 1_790_000_000))
            .addAsset(AssetRequest(url: transport.serve(randomData(100, seed: 1), at: "kept"), destinationPath: "kept.pdf"))
        let climbing = try await library.addIssue(name: "i", date: Date(timeIntervalSince1970: 1_790_086_400))
            .addAsset(AssetRequest(url: transport.serve(randomData(100, seed: 2), at: "climbing"), destinationPath: "a.pdf"))
        let renamed = try await library.addIssue(name: "j", date: Date(timeIntervalSince1970: 1_790_172_800))
            .addAsset(AssetRequest(url: transport.serve(randomData(100, seed: 3), at: "renamed"), destinationPath: "b.pdf"))
        try await library.scheduler.store.pool.writeWithoutTransaction { db in
            try db.execute(sql: "UPDATE asset SET destinationPath = '../../../outside.pdf' WHERE id = ?", arguments: [climbing.identifier])
            try db.execute(sql: "PRAGMA foreign_keys = OFF")
            try db.execute(sql: "UPDATE issue SET name = '..' WHERE name = 'j'")
            try db.execute(sql: "UPDATE asset SET issueName = '..' WHERE id = ?", arguments: [renamed.identifier])
            try db.execute(sql: "PRAGMA foreign_keys = ON")
        }
        await library.close()

        library = try openLibrary()
        for id in [kept.identifier, climbing.identifier, renamed.identifier] { try await library.asset(identifier: id)?.download() }
        await library.waitUntilIdle()
        #expect(try await library.asset(identifier: kept.identifier)?.state == .delivered)
        #expect(!FileManager.default.fileExists(atPath: folder.file("outside.pdf").path), "a stored path led out of the library")
        #expect(!FileManager.default.fileExists(atPath: root.appendingPathComponent("b.pdf").path), "an issue named '..' is the library")
        for (asset, problem) in [(climbing, "its destination path '../../../outside.pdf' must not contain '..'"),
                                 (renamed, "its issue name '..' must not start with '.'")] {
            let state = try await library.asset(identifier: asset.identifier)?.state
            guard case .failed(let message)? = state else {
                Testing.Issue.record("expected the asset to fail (\(problem)), got \(String(describing: state))")
                continue
            }
            #expect(message.contains(problem), "\(message)")
        }
        #expect(try await library.issue(named: "..") == nil)
        let damaged = try library.damagedRows
        #expect(damaged.map(\.table) == [.issue])
        #expect(damaged.map(\.key) == [".."])
        #expect(damaged.map(\.column) == ["name"])
        // Purging passes over it, and the library stays.
        #expect(try await library.purge(keep: 0) == ["kept"])
        #expect(FileManager.default.fileExists(atPath: root.appendingPathComponent("library.sqlite").path))
        await library.close()
    }

    /// Issue 26: the cover path an issue row holds was read back without the rule, so a damaged
    /// row pointed ``Issue/coverURL`` anywhere (`../../../etc/passwd`); and a destination path
    /// with a C1 control, which the configuration refused, passed the rows' copy of the rule.
    @Test func aStoredCoverPathLeavingTheIssueFolderReadsAsNoneAndAStoredC1PathIsDamaged() async throws {
        var library = try open()
        let issue = try await library.addIssue(name: "i", date: Date(timeIntervalSince1970: 1_790_000_000))
        try await library.addIssue(name: "j", date: Date(timeIntervalSince1970: 1_790_086_400))
        let asset = try await issue.addAsset(AssetRequest(url: URL(fileURLWithPath: "/nowhere/a"), destinationPath: "a.pdf"))
        try await library.scheduler.store.pool.write { db in
            try db.execute(sql: "UPDATE issue SET coverPath = '../../../etc/passwd' WHERE name = 'i'")
            try db.execute(sql: "UPDATE issue SET coverPath = 'cover.jpg' WHERE name = 'j'")
            try db.execute(sql: "UPDATE asset SET destinationPath = ? WHERE id = ?", arguments: ["a\u{85}.pdf", asset.identifier])
        }
        await library.close()

        library = try open()
        #expect(try await library.issue(named: "i")?.coverURL == nil)
        let cover = try await #require(library.issue(named: "j")?.coverURL)
        #expect(try await cover == library.issue(named: "j")?.contentURL.appendingPathComponent("cover.jpg"))
        guard case .failed(let message)? = try await library.asset(identifier: asset.identifier)?.state else {
            Testing.Issue.record("expected the asset to fail, got \(String(describing: try await library.asset(identifier: asset.identifier)?.state))")
            await library.close()
            return
        }
        #expect(message.contains("its destination path 'a\\u{85}.pdf' must not contain NUL, control or bidi characters"), "\(message)")
        await library.close()
    }
}
