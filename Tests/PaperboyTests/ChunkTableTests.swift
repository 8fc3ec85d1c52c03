import Crypto
import Foundation
import GRDB
@testable import Paperboy
import PaperboyTesting
import Testing

/// The store's chunk table (migration `v8-chunk-table`): where the chunks of delivered indexed
/// assets are, found by SHA-256, gone with their asset.
@Suite("chunk table", .timeLimit(.minutes(1)))
struct ChunkTableTests {
    let folder = TempFolder()
    var root: URL { folder.file("library") }

    func open() throws(LibraryError) -> Library {
        try Library.open(at: root, transports: TransportRegistry([InMemoryTransport()]), configuration: .forTests())
    }

    /// `count` chunks of 1000 bytes with made-up digests, `seed` telling sets apart.
    static func chunks(_ count: Int, seed: UInt8) -> [ChunkIndex.Chunk] {
        (0..<count).map { number in
            ChunkIndex.Chunk(offset: Int64(number) * 1000, length: 1000,
                             sha256: SHA256Value(SHA256.hash(data: Data([seed, UInt8(number & 0xFF), UInt8(number >> 8)]))))
        }
    }

    func rows(_ library: Library) throws -> Int {
        try library.scheduler.store.pool.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM chunk") ?? -1 }
    }

    /// Records `chunks` as the file asset `id` finished with, in state `state`.
    func record(_ chunks: [ChunkIndex.Chunk], of id: String, state: PersistedState, in library: Library) throws {
        var patch = AssetPatch(id: id)
        patch.state = state
        patch.chunks = chunks
        library.scheduler.store.submit(patch)
        if let error = library.scheduler.store.flush() { throw error }
    }

    @Test func aLibraryOfTheVersionBeforeGetsTheTableIndexedBySHA256() async throws {
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        let queue = try DatabaseQueue(path: root.appendingPathComponent("library.sqlite").path)
        try await queue.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA journal_mode = WAL") }
        try Migrations.migrator.migrate(queue, upTo: "v7-bytes-reused")
        try await queue.write { db in
            try db.execute(sql: "INSERT INTO issue (name, date, addedAt, isNew) VALUES ('i', '2026-11-21 00:00:00.000', '2026-11-21 00:00:00.000', 0)")
            try db.execute(sql: """
                INSERT INTO asset (id, issueName, seq, url, destinationPath, state, indexURL)
                VALUES ('a', 'i', 1, 'mem://example/a', 'a.pdf', 'delivered', 'mem://example/a.pbidx')
                """)
        }
        try queue.close()

        let library = try open()
        let (columns, indexes) = try await library.scheduler.store.pool.read { db in
            (try db.columns(in: "chunk").map(\.name), try db.indexes(on: "chunk").map(\.columns))
        }
        #expect(columns == ["sha256", "assetID", "offset", "length"])
        #expect(indexes.contains(["sha256"]), "\(indexes)")
        // The asset of the version before is there, and its file's chunks can be recorded now.
        let chunks = Self.chunks(3, seed: 1)
        try record(chunks, of: "a", state: .delivered, in: library)
        let found = try library.scheduler.store.deliveredChunks(among: chunks.map(\.sha256))
        #expect(found.count == 3)
        #expect(found[chunks[2].sha256] == DeliveredChunk(issueName: "i", path: "a.pdf", offset: 2000, length: 1000))
        await library.close()
    }

    @Test func chunksAreFoundOnlyInDeliveredAssetsAndGoWithTheirAssetAndIssue() async throws {
        let library = try open()
        let first = try await library.addIssue(name: "first", date: Date())
        let second = try await library.addIssue(name: "second", date: Date())
        let delivered = try await first.addAsset(AssetRequest(url: URL(string: "mem://example/a")!, destinationPath: "a.pdf"))
        let finished = try await second.addAsset(AssetRequest(url: URL(string: "mem://example/b")!, destinationPath: "b.pdf"))
        let (a, b) = (Self.chunks(500, seed: 1), Self.chunks(500, seed: 2))
        try record(a, of: delivered.identifier, state: .delivered, in: library)
        try record(b, of: finished.identifier, state: .finished, in: library)
        #expect(try rows(library) == 1000)

        // One lookup for them all (more digests than SQLite takes arguments in one statement).
        let unknown = Self.chunks(40_000, seed: 3).map(\.sha256)
        let found = try library.scheduler.store.deliveredChunks(among: unknown + a.map(\.sha256) + b.map(\.sha256))
        #expect(found.count == 500)
        #expect(Set(found.keys) == Set(a.map(\.sha256)))
        #expect(found.values.allSatisfy { $0.issueName == "first" && $0.path == "a.pdf" })

        // Recorded again (the asset finished again): replaced, not added to.
        try record(Array(a.prefix(10)), of: delivered.identifier, state: .delivered, in: library)
        #expect(try rows(library) == 510)
        // Removed with the asset's issue.
        try await library.removeIssue(first)
        #expect(try rows(library) == 500)
        #expect(try library.scheduler.store.deliveredChunks(among: a.map(\.sha256)).isEmpty)
        try await library.removeIssue(second)
        #expect(try rows(library) == 0)
        await library.close()
    }

    /// The lookup goes from the digests to their rows through the SHA-256 index, then to each
    /// row's asset by its key, never through every delivered asset's chunks (what SQLite chose for
    /// a plain join: 20 times slower with 100,000 rows of one asset, Benchmarks/delta/lookup.sh).
    @Test func theLookupStartsFromTheSHA256Index() async throws {
        let library = try open()
        let issue = try await library.addIssue(name: "i", date: Date())
        let asset = try await issue.addAsset(AssetRequest(url: URL(string: "mem://example/a")!, destinationPath: "a.pdf"))
        try record(Self.chunks(2000, seed: 1), of: asset.identifier, state: .delivered, in: library)
        let digests = Self.chunks(500, seed: 2).map { Data($0.sha256.bytes) }
        let plan = try await library.scheduler.store.pool.read { db in
            try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN " + LibraryStore.deliveredChunksSQL(count: digests.count),
                             arguments: StatementArguments(digests)).map { $0["detail"] as String }
        }
        #expect(plan.count == 2 && plan.first?.contains("chunk USING INDEX chunk_sha256") == true, "\(plan)")
        #expect(plan.last?.contains("asset USING INDEX sqlite_autoindex_asset_1 (id=?)") == true, "\(plan)")
        await library.close()
    }

    /// The chunks of an asset whose issue was removed while they waited in a batch: nothing is
    /// recorded and the batch (the other assets' updates in it) is written.
    @Test func chunksOfAnAssetNoLongerThereFailNothing() async throws {
        let library = try open()
        let issue = try await library.addIssue(name: "i", date: Date())
        let asset = try await issue.addAsset(AssetRequest(url: URL(string: "mem://example/a")!, destinationPath: "a.pdf"))
        var gone = AssetPatch(id: "removed-meanwhile")
        gone.chunks = Self.chunks(3, seed: 1)
        library.scheduler.store.submit(gone)
        try record(Self.chunks(2, seed: 2), of: asset.identifier, state: .delivered, in: library)
        #expect(try rows(library) == 2)
        await library.close()
    }

    @Test func anotherAssetDeliveredToTheSamePathTakesThePlaceOfTheChunksThere() async throws {
        let library = try open()
        let issue = try await library.addIssue(name: "i", date: Date())
        let old = try await issue.addAsset(AssetRequest(url: URL(string: "mem://example/v1")!, destinationPath: "mag.pdf"))
        let new = try await issue.addAsset(AssetRequest(url: URL(string: "mem://example/v2")!, destinationPath: "mag.pdf"))
        try record(Self.chunks(5, seed: 1), of: old.identifier, state: .delivered, in: library)
        // The corrected version replaces the file: the first one's chunks are no longer there.
        try record(Self.chunks(3, seed: 2), of: new.identifier, state: .finished, in: library)
        #expect(try rows(library) == 3)
        await library.close()
    }
    /// The chunks recorded for the file at a path of an issue, in file order (what a corrected
    /// version's plan uses instead of cutting that file again): none for another path or issue,
    /// or an unpacked asset; nil for a damaged row.
    @Test func theChunksOfTheFileAtAPathAreReadInFileOrder() async throws {
        let library = try open()
        let issue = try await library.addIssue(name: "i", date: Date())
        let other = try await library.addIssue(name: "j", date: Date())
        let old = try await issue.addAsset(AssetRequest(url: URL(string: "mem://example/v1")!, destinationPath: "mag.pdf"))
        let elsewhere = try await other.addAsset(AssetRequest(url: URL(string: "mem://example/v1")!, destinationPath: "mag.pdf"))
        let chunks = Self.chunks(700, seed: 1)
        // Recorded out of order: read back by offset.
        try record(chunks.reversed(), of: old.identifier, state: .delivered, in: library)
        try record(Self.chunks(3, seed: 2), of: elsewhere.identifier, state: .delivered, in: library)
        let store = library.scheduler.store
        #expect(try store.recordedChunks(ofFileAt: "mag.pdf", inIssue: "i") == chunks)
        #expect(try store.recordedChunks(ofFileAt: "other.pdf", inIssue: "i") == nil)
        #expect(try store.recordedChunks(ofFileAt: "mag.pdf", inIssue: "j") == Self.chunks(3, seed: 2))
        try await store.pool.write { db in
            try db.execute(sql: "UPDATE chunk SET length = -5 WHERE assetID = ? AND offset = 1000", arguments: [old.identifier])
        }
        #expect(try store.recordedChunks(ofFileAt: "mag.pdf", inIssue: "i") == nil)
        await library.close()
    }
}
