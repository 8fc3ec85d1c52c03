import Foundation
import Testing
@testable import Paperboy
import PaperboyTesting

/// Opening a library: what the reconciler may remove, and what it must leave alone.
@Suite("Reconciler", .timeLimit(.minutes(2)))
struct ReconcilerTests {
    let folder = TempFolder()
    var root: URL { folder.file("library") }

    func open() throws(LibraryError) -> Library {
        try Library.open(at: root, transports: TransportRegistry([InMemoryTransport()]), configuration: Library.Configuration.forTests())
    }

    /// A library with two idle assets, one with a partial file on disk, one with an inbox file
    /// (which a successful open takes as finished).
    func libraryWithFiles() async throws -> (partial: URL, inbox: URL) {
        let library = try open()
        let issue = try await library.addIssue(name: "i", date: Date())
        let asset = try await issue.addAsset(AssetRequest(url: URL(string: "mem://example/a.pdf")!, destinationPath: "a.pdf"))
        let finished = try await issue.addAsset(AssetRequest(url: URL(string: "mem://example/b.pdf")!))
        let layout = library.scheduler.layout
        let partial = layout.partialURL(asset: asset.identifier)
        let inbox = layout.inboxURL(asset: finished.identifier, request: try #require(finished.request))
        try Data(repeating: 1, count: 1000).write(to: partial)
        try Data(repeating: 2, count: 1000).write(to: inbox)
        await library.close()
        return (partial, inbox)
    }

    @Test func aDatabaseThatCannotBeReadFailsTheOpenAndDeletesNothing() async throws {
        let (partial, inbox) = try await libraryWithFiles()
        // A damaged schema: the read of the assets fails with an SQLite error at open.
        var library: Library? = try open()
        try await library!.scheduler.store.pool.write { db in
            try db.execute(sql: "ALTER TABLE asset RENAME COLUMN state TO damaged")
        }
        await library!.close()
        library = nil
        do {
            _ = try open()
            Issue.record("a library whose assets cannot be read was opened")
        } catch {
            #expect(error.code == .storage)
            #expect(error.message.contains("cannot read the assets of library database \(root.path)/library.sqlite"), "\(error.message)")
            #expect(error.message.contains("no such column"), "\(error.message)")
        }
        // Taken as "no assets", every file would be an orphan: none may go.
        #expect(FileManager.default.fileExists(atPath: partial.path))
        #expect(FileManager.default.fileExists(atPath: inbox.path))
        // The failed open released the library's lock: a later one fails for the same reason.
        #expect { _ = try open() } throws: { ($0 as? LibraryError)?.message.contains("no such column") == true }
    }

    @Test func staleUnpackStagingFoldersAreRemovedAtOpenNeverThroughLinks() async throws {
        try await open().close()
        let issue = root.appendingPathComponent("Issues/i")
        let staging = issue.appendingPathComponent(".unpack-0d3c/pages")
        try FileManager.default.createDirectory(at: staging, withIntermediateDirectories: true)
        try Data("half".utf8).write(to: staging.appendingPathComponent("p1.html"))
        let kept = issue.appendingPathComponent("kept.html")
        try Data("kept".utf8).write(to: kept)
        // Files named like a staging folder (a destination path may be `.unpack-notes.txt`):
        // not staging folders, kept, in a folder with a subfolder and in one without.
        try Data("notes".utf8).write(to: issue.appendingPathComponent(".unpack-notes.txt"))
        let plain = root.appendingPathComponent("Issues/plain")
        try FileManager.default.createDirectory(at: plain, withIntermediateDirectories: true)
        try Data("notes".utf8).write(to: plain.appendingPathComponent(".unpack-notes.txt"))
        // A link named like a staging folder: not a folder, kept, and never followed.
        let outside = folder.file("outside")
        try FileManager.default.createDirectory(at: outside, withIntermediateDirectories: true)
        try Data("precious".utf8).write(to: outside.appendingPathComponent("file"))
        try FileManager.default.createSymbolicLink(atPath: issue.appendingPathComponent(".unpack-link").path, withDestinationPath: outside.path)
        // An issue folder that is a link is not entered.
        let elsewhere = folder.file("elsewhere/.unpack-9")
        try FileManager.default.createDirectory(at: elsewhere, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: root.appendingPathComponent("Issues/linked").path, withDestinationPath: folder.file("elsewhere").path)

        let library = try open()
        await library.close()
        let names = try FileManager.default.contentsOfDirectory(atPath: issue.path).sorted()
        #expect(names == [".unpack-link", ".unpack-notes.txt", "kept.html"])
        #expect(try FileManager.default.contentsOfDirectory(atPath: plain.path) == [".unpack-notes.txt"])
        #expect(try Bytes(Data(contentsOf: outside.appendingPathComponent("file"))) == Bytes(Data("precious".utf8)))
        #expect(FileManager.default.fileExists(atPath: elsewhere.path))
    }
}
