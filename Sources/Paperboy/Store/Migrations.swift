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
        migrator.registerMigration("v3-request-columns") { db in
            // Requests as typed columns instead of JSON text: the scheduler pages through queued
            // assets by priority and the status questions are SQL, so nothing parses a request to
            // answer them. A failure keeps its codes, so its error reads the same after a reopen.
            try db.create(table: "asset_v3") { t in
                t.primaryKey("id", .text)
                t.column("issueName", .text).notNull().references("issue", column: "name", onDelete: .cascade)
                t.column("seq", .integer).notNull()
                t.column("url", .text).notNull()
                t.column("destinationPath", .text)
                t.column("sha256", .text)
                t.column("unpack", .text)
                t.column("role", .text).notNull().defaults(to: AssetRole.content.rawValue)
                t.column("priority", .integer).notNull().defaults(to: 0)
                t.column("maxBytesPerSecond", .integer)
                // The network policy override: allowed kinds, comma-separated ('' for none, NULL
                // when not overridden), and each attribute (NULL when not overridden).
                t.column("networkKinds", .text)
                t.column("networkExpensive", .boolean)
                t.column("networkConstrained", .boolean)
                t.column("networkRoaming", .boolean)
                // JSON objects of strings, NULL when empty.
                t.column("headers", .text)
                t.column("options", .text)
                t.column("userInfo", .blob)
                t.column("state", .text).notNull()
                t.column("detail", .text)
                // A failed asset's LibraryError code, its transport error code and errno, if any
                // (errno gave way to the failure's reason in v4).
                t.column("failureCode", .text)
                t.column("transportCode", .text)
                t.column("failureErrno", .integer)
                t.column("retryAt", .datetime)
                t.column("attempts", .integer).notNull().defaults(to: 0)
                t.column("bytesOnDisk", .integer).notNull().defaults(to: 0)
                t.column("expectedBytes", .integer)
                t.column("validator", .text)
                t.column("validatorStrength", .text)
                t.column("checkpointBoot", .text)
            }
            // A request that is not a JSON object (a damaged row) gets the URL `unreadable:request`:
            // its asset fails at open with a clear message, the others run.
            try db.execute(sql: """
                INSERT INTO asset_v3 (id, issueName, seq, url, destinationPath, sha256, unpack, role, priority,
                  maxBytesPerSecond, networkKinds, networkExpensive, networkConstrained, networkRoaming, headers, options,
                  userInfo, state, detail, retryAt, attempts, bytesOnDisk, expectedBytes, validator, validatorStrength,
                  checkpointBoot)
                SELECT id, issueName, seq,
                  CASE WHEN ok AND json_type(r, '$.url') = 'text' THEN json_extract(r, '$.url') ELSE 'unreadable:request' END,
                  CASE WHEN ok THEN json_extract(r, '$.destinationPath') END,
                  CASE WHEN ok THEN json_extract(r, '$.sha256') END,
                  CASE WHEN ok THEN json_extract(r, '$.unpack') END,
                  coalesce(CASE WHEN ok THEN json_extract(r, '$.role') END, 'content'),
                  coalesce(CASE WHEN ok THEN json_extract(r, '$.priority') END, 0),
                  CASE WHEN ok THEN json_extract(r, '$.maxBytesPerSecond') END,
                  CASE WHEN ok AND json_type(r, '$.network.allowedKinds') = 'array' THEN
                    coalesce((SELECT group_concat(value, ',') FROM json_each(r, '$.network.allowedKinds')), '') END,
                  CASE WHEN ok THEN json_extract(r, '$.network.allowsExpensive') END,
                  CASE WHEN ok THEN json_extract(r, '$.network.allowsConstrained') END,
                  CASE WHEN ok THEN json_extract(r, '$.network.allowsRoaming') END,
                  CASE WHEN ok AND json_type(r, '$.headers') = 'object' AND json_extract(r, '$.headers') != '{}'
                    THEN json_extract(r, '$.headers') END,
                  CASE WHEN ok AND json_type(r, '$.options') = 'object' AND json_extract(r, '$.options') != '{}'
                    THEN json_extract(r, '$.options') END,
                  userInfo, state, detail, retryAt, attempts, bytesOnDisk, expectedBytes, validator, validatorStrength,
                  checkpointBoot
                FROM (SELECT *, request AS r,
                        CASE WHEN json_valid(request) THEN json_type(request) = 'object' ELSE 0 END AS ok FROM asset)
                """)
            try db.drop(table: "asset")
            try db.rename(table: "asset_v3", to: "asset")
            // Issue listings in order; the scheduler's next in line (queued, highest priority,
            // then first in); counts of an issue's assets by state.
            try db.create(index: "asset_issue_seq", on: "asset", columns: ["issueName", "seq"])
            try db.execute(sql: "CREATE INDEX asset_queue ON asset(state, priority DESC, seq)")
            try db.create(index: "asset_issue_state", on: "asset", columns: ["issueName", "state"])
        }
        migrator.registerMigration("v4-failure-reason") { db in
            // A failure keeps its reason and whether it may be retried, as decided when it
            // happened, instead of deciding them again from its codes and errno at each read.
            try db.alter(table: "asset") { t in
                t.add(column: "failureReason", .text)
                t.add(column: "failureRetryable", .boolean)
            }
            // The failures recorded before: their reason from their codes (by the one rule), and
            // retryable as they read before (a transport code's default). One update per
            // combination of codes, however many assets failed.
            let combinations = try Row.fetchAll(db, sql: """
                SELECT DISTINCT failureCode, transportCode, failureErrno FROM asset WHERE failureCode IS NOT NULL
                """)
            for combination in combinations {
                let values: [DatabaseValue] = [combination[0], combination[1], combination[2]]
                let code = LibraryError.Code(String.fromDatabaseValue(values[0]) ?? "")
                let transport = String.fromDatabaseValue(values[1]).map(TransportError.Code.init)
                let errno = Int32.fromDatabaseValue(values[2]).flatMap(POSIXErrorCode.init(rawValue:))
                let reason = LibraryError.Reason(code: code, transportCode: transport, posixCode: errno)
                try db.execute(sql: """
                    UPDATE asset SET failureReason = ?, failureRetryable = ?
                    WHERE failureCode IS ? AND transportCode IS ? AND failureErrno IS ?
                    """, arguments: [reason.rawValue, transport?.isRetryableByDefault ?? false, values[0], values[1], values[2]])
            }
            try db.alter(table: "asset") { t in t.drop(column: "failureErrno") }
        }
        migrator.registerMigration("v5-chunk-index") { db in
            // The chunk index an asset's request names (AssetRequest.index).
            try db.alter(table: "asset") { t in t.add(column: "indexURL", .text) }
        }
        migrator.registerMigration("v6-mirrors") { db in
            // An asset's mirrors (``AssetRequest/mirrors``): a JSON array of URLs, NULL for none.
            try db.alter(table: "asset") { t in t.add(column: "mirrors", .text) }
        }
        migrator.registerMigration("v7-bytes-reused") { db in
            // Bytes of the file last finished that were copied from files the library held
            // (``AssetStatus/bytesReused``); NULL for none.
            try db.alter(table: "asset") { t in t.add(column: "bytesReused", .integer) }
        }
        migrator.registerMigration("v8-chunk-table") { db in
            // The chunks of the file each indexed asset finished with (its index's), used while
            // the asset is delivered (``LibraryStore/deliveredChunks(among:)``): found by SHA-256,
            // gone with their asset. Keyed by (asset, offset): the key serves the asset's deletes.
            try db.create(table: "chunk", options: .withoutRowID) { t in
                t.column("sha256", .blob).notNull()
                t.column("assetID", .text).notNull().references("asset", column: "id", onDelete: .cascade)
                t.column("offset", .integer).notNull()
                t.column("length", .integer).notNull()
                t.primaryKey(["assetID", "offset"])
            }
            try db.create(index: "chunk_sha256", on: "chunk", columns: ["sha256"])
        }
        migrator.registerMigration("v9-segments") { db in
            // The ranges past `bytesOnDisk` written, made durable and recorded with `validator`
            // by a transfer over several connections (``RecordedSegments/stored``); NULL for none.
            try db.alter(table: "asset") { t in t.add(column: "segments", .text) }
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
