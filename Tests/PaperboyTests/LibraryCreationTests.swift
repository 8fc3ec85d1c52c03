import Foundation
import Testing
@testable import Paperboy
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
        _ = try library.addIssue(name: "one", date: Date())
        await library.close()
        #expect(!FileManager.default.fileExists(atPath: leftover.path))
        let database = root.appendingPathComponent("library.sqlite")
        let mode = try #require(try FileManager.default.attributesOfItem(atPath: database.path)[.posixPermissions] as? Int)
        #expect(mode & 0o077 == 0, "mode \(String(mode, radix: 8))")
        // Complete: a read-only open (what `status` does) accepts it.
        let reading = try Library.openForReading(at: root)
        #expect(reading.issue(named: "one") != nil)
    }
}
