import Foundation
import Testing
@testable import Paperboy
import PaperboyTestServers
import PaperboyTesting

/// A new library database is created whole: migrated next to its place, then renamed there.
@Suite("Library creation", .timeLimit(.minutes(2)))
struct LibraryCreationTests {
    let folder = TempFolder()

    @Test func aNewDatabaseIsMigratedAsideThenRenamedAndALeftoverIsReplaced() async throws {
        let root = folder.file("library")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        // What a process killed while creating a library leaves: a half-written file aside.
        let leftover = root.appendingPathComponent(".library.sqlite.new")
        try Data("not a database".utf8).write(to: leftover)
        let library = try Library.open(at: root, transports: TransportRegistry([InMemoryTransport()]), configuration: Library.Configuration.forTests())
        _ = try await library.addIssue(name: "one", date: Date())
        await library.close()
        #expect(!FileManager.default.fileExists(atPath: leftover.path))
        let database = root.appendingPathComponent("library.sqlite")
        let mode = try #require(try FileManager.default.attributesOfItem(atPath: database.path)[.posixPermissions] as? Int)
        #expect(mode & 0o077 == 0, "mode \(String(mode, radix: 8))")
        // Complete: a read-only open (what `status` does) accepts it.
        let reading = try Library.openForReading(at: root)
        #expect(try await reading.issue(named: "one") != nil)
    }

    /// A writer killed mid-transaction leaves a hot journal (or a WAL index to rebuild) that a
    /// read-only connection cannot roll back: `status` and the next `sync` refused the library with
    /// "attempt to write a readonly database" (the crash loop, about one run in eight).
    @Test func aHotJournalLeftByAKilledWriterIsRolledBackAtTheNextOpen() async throws {
        let root = folder.file("library")
        do {
            // In a scope of its own: the database's connections close with the library.
            let library = try Library.open(at: root, transports: TransportRegistry([InMemoryTransport()]), configuration: Library.Configuration.forTests())
            _ = try await library.addIssue(name: "kept", date: Date())
            await library.close()
        }
        let database = root.appendingPathComponent("library.sqlite")
        // Back to a rollback journal, then killed inside a transaction whose pages spilled to
        // the database file: the journal left behind is hot.
        let script = """
            import os, signal, sqlite3, sys
            try:
                db = sqlite3.connect(sys.argv[1], isolation_level=None)
                print(db.execute("PRAGMA journal_mode = DELETE").fetchone())
                db.execute("PRAGMA cache_size = 1")
                db.execute("BEGIN")
                db.execute("CREATE TABLE filler (x)")
                for i in range(2000): db.execute("INSERT INTO filler VALUES (?)", (os.urandom(512),))
                db.execute("DELETE FROM issue")
            except Exception as error:
                print(error)
                sys.exit(1)
            sys.stdout.flush()
            os.kill(os.getpid(), signal.SIGKILL)
            """
        let python = try await offThePool { try ChildProcess.run("/usr/bin/python3", ["-c", script, database.path]) }
        #expect(python.status == 128 + SIGKILL, "\(python.output)")
        let journal = database.path + "-journal"
        let size = try #require(try FileManager.default.attributesOfItem(atPath: journal)[.size] as? Int, "no journal left")
        #expect(size > 0)
        // The read-only open (status) sees the last committed state.
        let reading = try Library.openForReading(at: root)
        #expect(try await reading.issue(named: "kept") != nil)
        // And a writer opens it as well.
        let reopened = try Library.open(at: root, transports: TransportRegistry([InMemoryTransport()]), configuration: Library.Configuration.forTests())
        #expect(try await reopened.issue(named: "kept") != nil)
        await reopened.close()
    }
}
