import Foundation
import Testing
import GRDB
@testable import Paperboy
import PaperboyTesting

/// A library written by a newer Paperboy is refused, by writers and readers alike, untouched.
@Suite("Migrations", .timeLimit(.minutes(2)))
struct MigrationsTests {
    let folder = TempFolder()
    var root: URL { folder.file("library") }
    var database: URL { root.appendingPathComponent("library.sqlite") }

    func open() throws(LibraryError) -> Library {
        try Library.open(at: root, transports: TransportRegistry([InMemoryTransport()]), configuration: Library.Configuration.forTests())
    }

    /// A library whose database records a migration this build does not know, closed (its
    /// WAL checkpointed): the database file is all there is.
    func libraryFromTheFuture() throws {
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        let queue = try DatabaseQueue(path: database.path)
        try queue.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA journal_mode = WAL") }
        try Migrations.migrator.migrate(queue)
        try queue.write { db in
            try db.execute(sql: "INSERT INTO issue (name, date, addedAt) VALUES ('i', '2026-11-21', '2026-11-21')")
            try db.execute(sql: "INSERT INTO grdb_migrations (identifier) VALUES ('v99-from-the-future')")
        }
        try queue.close()
        #expect(!FileManager.default.fileExists(atPath: database.path + "-wal"))
    }

    /// The database's bytes and modification time.
    func snapshot() throws -> [String] {
        try [""].compactMap { suffix in
            let path = database.path + suffix
            guard FileManager.default.fileExists(atPath: path) else { return nil }
            let modified = (try FileManager.default.attributesOfItem(atPath: path)[.modificationDate] as? Date)?.timeIntervalSince1970 ?? 0
            return "\(suffix) \(sha256Hex(try Data(contentsOf: URL(fileURLWithPath: path)))) \(modified)"
        }
    }

    func expectRefusal(_ open: () throws(LibraryError) -> Library) {
        do {
            _ = try open()
            Issue.record("a library written by a newer Paperboy was opened")
        } catch {
            #expect(error.code == .storage)
            #expect(error.message.contains("\(database.path) was written by a newer Paperboy"), "\(error.message)")
            #expect(error.message.contains("'v99-from-the-future'"), "\(error.message)")
        }
    }

    @Test func aWriterRefusesALibraryFromANewerPaperboyAndLeavesItUntouched() async throws {
        try libraryFromTheFuture()
        let before = try snapshot()
        expectRefusal { () throws(LibraryError) in try open() }
        #expect(try snapshot() == before, "\(before)")
    }

    @Test func aReaderRefusesALibraryFromANewerPaperboy() async throws {
        try libraryFromTheFuture()
        let before = try snapshot()
        expectRefusal { () throws(LibraryError) in try Library.openForReading(at: root) }
        #expect(try snapshot() == before, "\(before)")
    }

    @Test func theGuardDoesNotDependOnTheListOfMigrations() async throws {
        // Every migration of this build is known, whatever the list: a fresh library opens again.
        try await open().close()
        let library = try open()
        let known = try await library.scheduler.store.pool.read { db in try Migrations.migrator.appliedIdentifiers(db) }
        #expect(known == Set(Migrations.migrator.migrations))
        await library.close()
        let reader = try Library.openForReading(at: root)
        #expect(reader.issues.isEmpty)
    }

    /// A new library's database is made without a sync per migration, then checkpointed, synced
    /// and renamed: the renamed file alone holds every migration (a WAL left beside the
    /// temporary file would not have followed it), and nothing is left beside it.
    @Test func aNewLibraryHoldsEveryMigrationInItsDatabaseFileAlone() async throws {
        let library = try open()
        let copy = folder.file("copy.sqlite")
        try FileManager.default.copyItem(at: database, to: copy)
        await library.close()
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: root.path).filter { $0.contains(".new") }
        #expect(leftovers.isEmpty, "\(leftovers)")
        var reading = Configuration()
        reading.readonly = true
        let queue = try DatabaseQueue(path: copy.path, configuration: reading)
        let (known, integrity, journal) = try await queue.read { db in
            (try Migrations.migrator.appliedIdentifiers(db), try String.fetchOne(db, sql: "PRAGMA integrity_check"),
             try String.fetchOne(db, sql: "PRAGMA journal_mode"))
        }
        try queue.close()
        #expect(known == Set(Migrations.migrator.migrations))
        #expect(integrity == "ok")
        #expect(journal == "wal")
    }
}
