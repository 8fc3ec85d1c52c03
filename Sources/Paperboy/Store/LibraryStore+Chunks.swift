import Foundation
import GRDB

/// Where one chunk of a delivered indexed asset is: in the file at `path` of issue `issueName`'s
/// folder, `length` bytes at `offset`. As the store holds it: the caller checks the path and the
/// bytes before it trusts either.
struct DeliveredChunk: Sendable, Equatable {
    var issueName: String
    var path: String
    var offset: Int64
    var length: Int
}

// The chunk table (migration `v8-chunk-table`): the chunks of the files indexed assets finished
// with, so that an indexed asset of any issue can copy a chunk the library already holds.
extension LibraryStore {
    /// How many digests one statement of ``deliveredChunks(among:)`` asks about: SQLite bounds a
    /// statement's arguments.
    static let chunkLookupBatch = 500

    /// Where the chunks with these SHA-256s are in the files of delivered assets (delivered to a
    /// path of their issue's folder, not unpacked): one place per digest found, any of those
    /// recorded. One read, a statement per ``chunkLookupBatch`` digests, each an index lookup.
    ///
    /// - Throws: ``LibraryError`` `.storage` naming the database when it cannot be read.
    func deliveredChunks(among digests: [SHA256Value]) throws(LibraryError) -> [SHA256Value: DeliveredChunk] {
        try reading("cannot look up chunks in library database \(fileURL.path)") { db in
            var found: [SHA256Value: DeliveredChunk] = [:]
            for start in stride(from: 0, to: digests.count, by: Self.chunkLookupBatch) {
                let part = digests[start..<min(start + Self.chunkLookupBatch, digests.count)]
                let sql = Self.deliveredChunksSQL(count: part.count)
                // The full batches share one prepared statement; the last, shorter one is made once.
                let statement = part.count == Self.chunkLookupBatch ? try db.cachedStatement(sql: sql) : try db.makeStatement(sql: sql)
                let rows = try Row.fetchCursor(statement, arguments: StatementArguments(part.map { Data($0.bytes) }))
                while let row = try rows.next() {
                    // A damaged row is passed over, never trusted.
                    guard let digest = try? row.decode(Data.self, atIndex: 0), digest.count == 32,
                          let offset = row.storedInteger(atIndex: 1), offset >= 0,
                          let length = row.storedInteger(atIndex: 2), length > 0, length <= Int64(Int32.max),
                          let issueName = try? row.decode(String.self, atIndex: 3),
                          let path = try? row.decode(String.self, atIndex: 4) else { continue }
                    let sha256 = SHA256Value(bytes: digest)
                    if found[sha256] == nil {
                        found[sha256] = DeliveredChunk(issueName: issueName, path: path, offset: offset, length: Int(length))
                    }
                }
            }
            return found
        }
    }

    /// The chunks recorded for the file at `path` of issue `issueName`'s folder (by the indexed
    /// asset that finished with it, not unpacked), in file order; nil when none are, or a row
    /// is damaged. A hint as the other rows are: the caller checks they cover the file as it is,
    /// and every chunk copied is checked again.
    ///
    /// - Throws: ``LibraryError`` `.storage` naming the database when it cannot be read.
    func recordedChunks(ofFileAt path: String, inIssue issueName: String) throws(LibraryError) -> [ChunkIndex.Chunk]? {
        try reading("cannot read the chunks of \(issueName)/\(path) in library database \(fileURL.path)") { db in
            let rows = try Row.fetchCursor(db, sql: """
                SELECT chunk.sha256, chunk.offset, chunk.length
                FROM asset JOIN chunk ON chunk.assetID = asset.id
                WHERE asset.issueName = ? AND asset.destinationPath = ? AND asset.unpack IS NULL
                ORDER BY chunk.assetID, chunk.offset
                """, arguments: [issueName, path])
            var chunks: [ChunkIndex.Chunk] = []
            while let row = try rows.next() {
                guard let digest = try? row.decode(Data.self, atIndex: 0), digest.count == 32,
                      let offset = row.storedInteger(atIndex: 1), offset >= 0,
                      let length = row.storedInteger(atIndex: 2), length > 0, length <= Int64(Int32.max) else { return nil }
                chunks.append(ChunkIndex.Chunk(offset: offset, length: Int(length), sha256: SHA256Value(bytes: digest)))
            }
            return chunks.isEmpty ? nil : chunks
        }
    }

    /// The lookup of `count` digests (each a 32-byte blob argument) in the chunks of delivered assets.
    static func deliveredChunksSQL(count: Int) -> String {
        // CROSS JOIN keeps this order: each digest through the SHA-256 index, then its asset by
        // key. Left to choose, SQLite (3.40) went through every delivered asset's chunks instead:
        // 36 ms a batch of 500 with 100,000 rows, against 1.7 ms (Benchmarks/delta/lookup.sh).
        """
        SELECT chunk.sha256, chunk.offset, chunk.length, asset.issueName, asset.destinationPath
        FROM chunk CROSS JOIN asset ON asset.id = chunk.assetID
        WHERE chunk.sha256 IN (\(databaseQuestionMarks(count: count)))
          AND asset.state = 'delivered' AND asset.destinationPath IS NOT NULL AND asset.unpack IS NULL
        """
    }

    /// Replaces the chunks recorded for asset `id` by `chunks`, in the transaction `db` of the
    /// batch that carries them. Recording chunks (not dropping them) also drops those of the other
    /// assets of its issue recorded at its path: the file there is being replaced by this one.
    /// Nothing is recorded for an asset no longer there (its issue removed while the batch
    /// waited): as the batch's other updates of it, it changes nothing and fails nothing.
    static func recordChunks(_ chunks: [ChunkIndex.Chunk], of id: String, in db: Database) throws {
        try db.execute(sql: "DELETE FROM chunk WHERE assetID = ?", arguments: [id])
        guard !chunks.isEmpty, try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM asset WHERE id = ?)", arguments: [id]) == true else { return }
        try db.execute(sql: """
            DELETE FROM chunk WHERE assetID IN (
              SELECT other.id FROM asset AS this JOIN asset AS other
                ON other.issueName = this.issueName AND other.destinationPath = this.destinationPath AND other.id != this.id
              WHERE this.id = ?)
            """, arguments: [id])
        let statement = try db.cachedStatement(sql: "INSERT INTO chunk (sha256, assetID, offset, length) VALUES (?, ?, ?, ?)")
        for chunk in chunks {
            try statement.execute(arguments: [Data(chunk.sha256.bytes), id, chunk.offset, chunk.length])
        }
    }
}
