import Foundation
import GRDB

/// The schema, one migration per version. Never edit a shipped migration: add one.
enum Migrations {
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            try db.create(table: "issue") { t in
                t.primaryKey("name", .text)
                t.column("date", .datetime).notNull()
                t.column("addedAt", .datetime).notNull()
                t.column("isNew", .boolean).notNull().defaults(to: false)
                t.column("coverPath", .text)
            }
            try db.create(table: "asset") { t in
                t.primaryKey("id", .text)
                t.column("issueName", .text).notNull().indexed()
                    .references("issue", column: "name", onDelete: .cascade)
                t.column("seq", .integer).notNull()
                t.column("request", .jsonText).notNull()
                t.column("userInfo", .blob)
                t.column("state", .text).notNull().indexed()
                t.column("detail", .text)
                t.column("retryAt", .datetime)
                t.column("attempts", .integer).notNull().defaults(to: 0)
                t.column("bytesOnDisk", .integer).notNull().defaults(to: 0)
                t.column("expectedBytes", .integer)
                t.column("validator", .text)
                t.column("validatorStrength", .text)
            }
            try db.create(table: "meta") { t in
                t.primaryKey("key", .text)
                t.column("value", .text).notNull()
            }
        }
        migrator.registerMigration("v2-checkpoint-boot") { db in
            // The boot in which the last checkpoint was recorded, while the partial file was
            // written strictly in order (NULL otherwise): see ``BootIdentity``.
            try db.alter(table: "asset") { t in
                t.add(column: "checkpointBoot", .text)
            }
        }
        return migrator
    }

    /// Refuses a database this build must not use, before anything is written to it.
    ///
    /// A migration this build does not know means a newer Paperboy wrote the library: its rows
    /// may mean things this build would misread or overwrite, so readers and writers alike
    /// refuse it. Only a reader refuses a database missing some of this build's migrations
    /// (a writer applies them). Whatever migrations a build registers, the rule is the same.
    ///
    /// - Throws: ``LibraryError`` `.storage` naming the file and the unknown migrations.
    static func check(_ db: Database, file: URL, readOnly: Bool) throws {
        let migrator = migrator
        let known = Set(migrator.migrations)
        let unknown = try migrator.appliedIdentifiers(db).subtracting(known).sorted()
        if !unknown.isEmpty {
            let list = unknown.map { "'\($0)'" }.joined(separator: ", ")
            throw LibraryError(.storage, "the library database \(file.path) was written by a newer Paperboy (unknown migration\(unknown.count == 1 ? "" : "s") \(list)); it was left untouched: use that version or a newer one")
        }
        if readOnly, try !migrator.hasCompletedMigrations(db) {
            throw LibraryError(.storage, "the library database \(file.path) was written by an older Paperboy; run 'paperboy sync' once to update it")
        }
    }
}
