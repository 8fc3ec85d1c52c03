import Foundation
import GRDB

/// The questions listings ask (how many assets are in each state, per issue; the assets of an
/// issue a page at a time), answered by SQL rather than by decoding every row.
///
/// With 100,000 assets, decoding every row to count states took 0.6 s (`paperboy issues`) and
/// holding them all for `paperboy status` 71 MiB; the aggregate reads only the `issueName` and
/// `state` columns.
extension LibraryStore {
    /// How many rows a page of ``forEachAsset(issueName:pageSize:_:)`` holds.
    static let assetPageSize = 1000

    /// The assets' counts per state, per issue (only issues with assets appear), or those of one
    /// issue; updates not yet written count as written.
    func assetCounts(issueName: String? = nil) -> [String: AssetCounts] {
        let filter = issueName == nil ? "" : "WHERE issueName = ?"
        let arguments: StatementArguments = issueName.map { [$0] } ?? []
        return withQueuedStates { queued in
            (try? pool.read { db -> [String: AssetCounts] in
                // Served by the issueName index (one issue) or a scan of the table.
                let rows = try Row.fetchAll(db, sql: """
                    SELECT issueName, state, COUNT(*), SUM(bytesOnDisk), SUM(MAX(bytesOnDisk, COALESCE(expectedBytes, 0))),
                           MIN(CASE WHEN state = 'retry' THEN retryAt END)
                    FROM asset \(filter) GROUP BY issueName, state
                    """, arguments: arguments)
                var counts: [String: AssetCounts] = [:]
                for row in rows {
                    guard let issue = try? row.decode(String.self, atIndex: 0),
                          let state = PersistedState(rawValue: (try? row.decode(String.self, atIndex: 1)) ?? "") else { continue }
                    var issueCounts = counts[issue, default: AssetCounts()]
                    issueCounts.add(state, count: Int(row.storedInteger(atIndex: 2) ?? 0))
                    issueCounts.bytesWritten += row.storedInteger(atIndex: 3) ?? 0
                    issueCounts.expectedBytes += row.storedInteger(atIndex: 4) ?? 0
                    if state == .retry, let retryAt = (try? row.decode(StoredDate?.self, atIndex: 5))??.date {
                        issueCounts.nextRetry = min(issueCounts.nextRetry ?? retryAt, retryAt)
                    }
                    counts[issue] = issueCounts
                }
                try Self.applyStateChanges(queued, to: &counts, issueName: issueName, in: db)
                return counts
            }) ?? [:]
        }
    }

    /// Moves the assets whose state change is queued (not yet written) to their new state.
    private static func applyStateChanges(_ patches: [String: PersistedState], to counts: inout [String: AssetCounts],
                                          issueName: String?, in db: Database) throws {
        guard !patches.isEmpty else { return }
        let ids = Array(patches.keys)
        // Bounded by one batch of updates (what the scheduler changed in the last 25 ms).
        let rows = try Row.fetchAll(db, sql: """
            SELECT id, issueName, state FROM asset WHERE id IN (\(databaseQuestionMarks(count: ids.count)))
            """, arguments: StatementArguments(ids))
        for row in rows {
            guard let id = try? row.decode(String.self, atIndex: 0), let issue = try? row.decode(String.self, atIndex: 1),
                  issueName == nil || issue == issueName,
                  let stored = PersistedState(rawValue: (try? row.decode(String.self, atIndex: 2)) ?? ""),
                  let queued = patches[id], queued != stored else { continue }
            counts[issue, default: AssetCounts()].add(stored, count: -1)
            counts[issue, default: AssetCounts()].add(queued, count: 1)
        }
    }

    /// Calls `body` with each of the issue's assets in the order they were added (updates not
    /// yet written applied), reading them `pageSize` rows at a time: memory holds one page
    /// however many assets the issue has, and `body` runs outside any database access, so it
    /// may read the library.
    func forEachAsset(issueName: String, pageSize: Int = assetPageSize, _ body: (AssetRecord) throws -> Void) rethrows {
        var after: (seq: Int64, id: String)?
        while true {
            let page = assetPage(issueName: issueName, after: after, limit: pageSize)
            for record in page { try body(record) }
            guard page.count == pageSize, let record = page.last else { return }
            after = (record.seq, record.id)
        }
    }

    /// The issue's assets after `after` (a record's `seq` and `id`) in the order they were added,
    /// at most `limit` of them, updates not yet written applied.
    func assetPage(issueName: String, after: (seq: Int64, id: String)?, limit: Int) -> [AssetRecord] {
        // A page is a range of the (issueName, seq) index, read without sorting the issue's
        // rows; ties on seq (a damaged table) are broken by id, so the order is total.
        overlaid {
            (try? pool.read { db -> [AssetRecord] in
                var request = AssetRecord.filter(Column("issueName") == issueName)
                if let after {
                    request = request.filter(Column("seq") > after.seq || (Column("seq") == after.seq && Column("id") > after.id))
                }
                return try request.order(Column("seq"), Column("id")).limit(limit).fetchAll(db)
            }) ?? []
        }
    }
}

extension AssetCounts {
    mutating func add(_ state: PersistedState, count: Int) {
        switch state {
        case .idle: idle += count
        case .queued: queued += count
        case .paused: paused += count
        case .retry: waitingForRetry += count
        case .network: waitingForNetwork += count
        case .downloading: downloading += count
        case .finished: finished += count
        case .delivered: delivered += count
        case .failed: failed += count
        case .cancelled: cancelled += count
        }
    }
}
