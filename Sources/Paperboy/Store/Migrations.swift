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
}
