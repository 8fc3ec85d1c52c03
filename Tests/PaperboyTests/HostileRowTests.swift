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

    @Test func hugeNegativeAndNonNumericValuesInAnAssetRowOpenWithoutATrap() async throws {
        var library = try open()
        let issue = try library.addIssue(name: "i", date: Date())
        let request = AssetRequest(url: URL(fileURLWithPath: "/nowhere/a"), sha256: String(repeating: "a", count: 64), destinationPath: "a")
        let added = try issue.addAsset(request)
        let other = try issue.addAsset(AssetRequest(url: URL(fileURLWithPath: "/nowhere/b"), destinationPath: "b"))
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
        let reopened = try #require(library.issue(named: "i"))
        #expect(reopened.assets.count == 2)
        for asset in reopened.assets {
            if case .waiting(.retry(let until, let attempt)) = asset.state {
                #expect(attempt <= Int(AssetRecord.maxStoredAttempts) + 6)
                #expect(until.timeIntervalSinceNow < 86_400 * 2)
            }
        }
        // A later asset still gets a sequence number after the huge one.
        let later = try reopened.addAsset(AssetRequest(url: URL(fileURLWithPath: "/nowhere/c"), destinationPath: "c"))
        #expect(try #require(library.scheduler.store.asset(id: later.identifier)).seq > 0)
        await library.close()
    }
}
