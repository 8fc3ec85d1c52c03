import Foundation
import Paperboy

/// How the commands report rows of the library that cannot be read (``Library/damagedRows``):
/// `issues`, `status` and `purge` list everything else, `sync` goes on with the other issues;
/// each then writes one line per damaged row, naming it and its removal, and exits 1.
enum DamagedRowReport {
    /// A damaged row as `issues --json` and `status --json` write it (`damagedRows`).
    struct Entry: Encodable {
        var table: String
        var key: String
        var column: String
        var value: String
        var removal: String

        init(_ row: DamagedRow) {
            table = row.table.rawValue
            key = row.key
            column = row.column
            value = row.value
            removal = row.removal
        }
    }

    /// The damaged rows of `library`; a library that cannot be read at all says so in the
    /// command's own error, so none are reported here.
    static func rows(of library: Library?) -> [DamagedRow] {
        (try? library?.damagedRows) ?? []
    }

    /// Writes one line per row on stderr: `paperboy: damaged row in DATABASE: issue 'b': its date … cannot
    /// be read; remove the row with: sqlite3 'DATABASE' "DELETE FROM issue WHERE rowid = 2"`.
    static func tell(_ rows: [DamagedRow]) {
        for row in rows { Console.error("paperboy: \(line(row))") }
    }

    static func line(_ row: DamagedRow) -> String { "damaged row in \(row.databasePath): \(row)" }
}
