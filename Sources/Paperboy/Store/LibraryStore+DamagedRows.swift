import Foundation
import GRDB

/// Rows that cannot be read are left out of every read and named by ``damagedRows()``: one
/// damaged row never hides the others (issue 26: one issue dated in year 10000 once emptied the
/// shelf, because reading all issues failed as a whole).
extension LibraryStore {
    /// The states an asset row may hold, as SQL.
    private static let knownStates = "(" + [PersistedState.idle, .queued, .paused, .retry, .network, .downloading, .finished,
                                            .delivered, .failed, .cancelled].map { "'\($0.rawValue)'" }.joined(separator: ", ") + ")"

    /// Every row that cannot be read, issues first, each table in the order its rows were written.
    ///
    /// Issues are few and decoded as ``IssueRecord`` decodes them; assets are found by one scan
    /// that checks the types of the columns ``AssetRecord`` needs.
    func damagedRows() throws(LibraryError) -> [DamagedRow] {
        let path = fileURL.path
        return try reading("cannot read library database \(path)") { db in
            var damaged: [DamagedRow] = []
            let issues = try Row.fetchCursor(db, sql: "SELECT rowid AS rowid, * FROM issue ORDER BY rowid")
            while let row = try issues.next() {
                do {
                    _ = try IssueRecord(row: row)
                } catch let damage as RowDamage {
                    damaged.append(DamagedRow(table: .issue, rowid: row.storedInteger("rowid") ?? 0,
                                              key: try? row.decode(String.self, forColumn: "name"), column: damage.column,
                                              value: damage.value, databasePath: path))
                }
            }
            let assets = try Row.fetchCursor(db, sql: """
                SELECT rowid, id, issueName, state, userInfo FROM asset
                WHERE typeof(id) != 'text' OR typeof(issueName) != 'text' OR typeof(state) != 'text'
                   OR state NOT IN \(Self.knownStates) OR typeof(userInfo) NOT IN ('blob', 'text', 'null')
                ORDER BY rowid
                """)
            while let row = try assets.next() {
                let id = try? row.decode(String.self, atIndex: 1)
                let column: Int
                if id == nil {
                    column = 1
                } else if (try? row.decode(String.self, atIndex: 2)) == nil {
                    column = 2
                } else if (try? row.decode(String.self, atIndex: 3)).flatMap(PersistedState.init(rawValue:)) == nil {
                    column = 3
                } else {
                    column = 4
                }
                damaged.append(DamagedRow(table: .asset, rowid: row.storedInteger(atIndex: 0) ?? 0, key: id,
                                          column: ["rowid", "id", "issueName", "state", "userInfo"][column], value: row[column],
                                          databasePath: path))
            }
            return damaged
        }
    }

    /// The damaged row of the issue named `name`, if its row exists and cannot be read.
    static func damagedIssue(named name: String, in db: Database, path: String) throws -> DamagedRow? {
        guard let row = try Row.fetchOne(db, sql: "SELECT rowid AS rowid, * FROM issue WHERE name = ?", arguments: [name]) else {
            return nil
        }
        do {
            _ = try IssueRecord(row: row)
            return nil
        } catch let damage as RowDamage {
            return DamagedRow(table: .issue, rowid: row.storedInteger("rowid") ?? 0, key: name, column: damage.column,
                              value: damage.value, databasePath: path)
        }
    }

    /// The issues of `rows` that can be read.
    static func readableIssues(_ rows: RowCursor) throws -> [IssueRecord] {
        var records: [IssueRecord] = []
        while let row = try rows.next() {
            if let record = try? IssueRecord(row: row) { records.append(record) }
        }
        return records
    }

    /// The assets of `request` that can be read (``AssetRecord/databaseSelection``, read by
    /// position). GRDB's `fetchAll` fails as a whole on one row that does not decode.
    ///
    /// Rows whose identifier is in `skipped` are passed over before they are decoded, and the
    /// read stops once `limit` records are decoded.
    static func readableAssets(_ request: QueryInterfaceRequest<AssetRecord>, in db: Database,
                               skipping skipped: Set<String> = [], limit: Int = .max) throws -> [AssetRecord] {
        let rows = try Row.fetchCursor(db, request)
        var records: [AssetRecord] = []
        while records.count < limit, let row = try rows.next() {
            // The identifier is column 0 (``AssetRecord/columnNames``), read without trapping.
            if !skipped.isEmpty, let id = try? row.decode(String.self, atIndex: 0), skipped.contains(id) { continue }
            if let record = try? AssetRecord(row: row) { records.append(record) }
        }
        return records
    }
}
