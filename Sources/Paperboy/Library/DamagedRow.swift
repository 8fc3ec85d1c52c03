import Foundation
import GRDB

/// A row of the library's database that cannot be read back, named so that it can be removed.
///
/// Rows are read as if hostile (another program, an older or newer version, a damaged disk may
/// have written them): one that cannot be read is left out of what the library reads
/// (``Library/issues``, ``Issue/assets``, listings, counts, purges, the scheduler), never fails the
/// others, and is reported by ``Library/damagedRows``. An issue row is damaged when its name,
/// date or time added cannot be read (a date outside years 1 to 9999 in UTC, text that is no
/// date, a blob, NULL); an asset row when its identifier, issue, state or userInfo cannot be read.
/// An asset row whose state is damaged still reads, as failed with this description.
public struct DamagedRow: Sendable, Hashable, CustomStringConvertible {
    /// The table that holds the row.
    public enum Table: String, Sendable, Hashable {
        case issue, asset
    }

    /// The table that holds the row.
    public var table: Table
    /// The issue's name or the asset's identifier, or `rowid N` when that cannot be read either.
    public var key: String
    /// The first column that cannot be read.
    public var column: String
    /// The column's value as an SQL literal (`'10000-01-01 00:00:00.000'`, `X'00FF'`, `NULL`),
    /// at most 64 characters of it, control characters escaped.
    public var value: String
    /// The SQL statement that removes the row (by its rowid); an issue's assets go with it.
    public var removal: String
    /// The database file.
    public var databasePath: String

    /// `issue 'b': its date '10000-01-01 00:00:00.000' cannot be read; remove the row with:
    /// sqlite3 '/…/library.sqlite' "DELETE FROM issue WHERE rowid = 2"`.
    public var description: String {
        let name = table == .issue ? "issue '\(key)'" : "asset \(key)"
        return "\(name): its \(column) \(value) cannot be read; remove the row with: "
            + "sqlite3 '\(databasePath)' \"\(removal)\""
    }

    /// A row as another process reported it (the daemon's `SHELF`).
    package init(table: Table, key: String, column: String, value: String, removal: String, databasePath: String) {
        self.table = table
        self.key = key
        self.column = column
        self.value = value
        self.removal = removal
        self.databasePath = databasePath
    }

    init(table: Table, rowid: Int64, key: String?, column: String, value: DatabaseValue, databasePath: String) {
        self.table = table
        self.key = key.map { TerminalText.escape($0) } ?? "rowid \(rowid)"
        self.column = column
        self.value = Self.literal(value)
        removal = "DELETE FROM \(table.rawValue) WHERE rowid = \(rowid)"
        self.databasePath = databasePath
    }

    /// `value` as SQLite would print it in a statement, shortened.
    static func literal(_ value: DatabaseValue) -> String {
        let limit = 64
        switch value.storage {
        case .null:
            return "NULL"
        case .int64(let integer):
            return String(integer)
        case .double(let real):
            return String(real)
        case .string(let text):
            let quoted = text.replacingOccurrences(of: "'", with: "''")
            let shown = quoted.count > limit ? String(quoted.prefix(limit)) + "…" : quoted
            return "'\(TerminalText.escape(shown))'"
        case .blob(let data):
            let hex = data.prefix(limit / 2).map { String(format: "%02X", $0) }.joined()
            return "X'\(hex)'" + (data.count > limit / 2 ? "…" : "")
        }
    }
}

/// Why a row cannot be read: the column and its value (thrown by the records' decoders).
struct RowDamage: Error {
    var column: String
    var value: DatabaseValue
}
