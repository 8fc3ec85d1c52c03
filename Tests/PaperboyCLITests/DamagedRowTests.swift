import Foundation
import GRDB
import PaperboyTesting
import Testing

/// Issue 26, case 2: one catalog date (year 10000 in UTC) once emptied the shelf for good. A date
/// outside years 1 to 9999 in UTC is refused where it enters; a row that cannot be read anyway
/// (written by hand, by another version, by a damaged disk) is named with its removal, and
/// everything else is still listed, purged and synced: in process and through a daemon (issue 27).
@Suite("paperboy with a damaged row", .timeLimit(.minutes(3)))
struct DamagedRowTests {
    let workspace = Workspace()

    /// A catalog with one issue per `(name, date)`, each a PDF with its checksum.
    func publish(_ issues: [(String, String)]) {
        var list: [String] = []
        for (name, date) in issues {
            let data = Data("issue \(name)".utf8)
            _ = workspace.write(data, to: "publisher/content/\(name).pdf")
            list.append("""
                {"name": "\(name)", "date": "\(date)", "assets": [{"url": "content/\(name).pdf", "sha256": "\(sha256Hex(data))", "path": "magazine.pdf"}]}
                """)
        }
        _ = workspace.write("{\"issues\": [\(list.joined(separator: ", "))]}", to: "publisher/catalog.json")
    }

    func config() -> URL {
        workspace.write("""
            [library]
            path = "lib"
            sync_to_disk = false
            [scheduler]
            retry_attempts = 1
            [[feeds]]
            name = "p"
            url = "publisher/catalog.json"
            """, to: "paperboy.toml")
    }

    func json(_ result: CLIResult) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any], "\(result.stdout)")
    }

    func names(_ document: [String: Any]) -> [String?] {
        ((document["issues"] as? [[String: Any]]) ?? []).map { $0["name"] as? String }
    }

    @Test(arguments: CLIRoute.allCases)
    func anIssueDatedInYear10000IsRefusedAndTheShelfStays(_ route: CLIRoute) async throws {
        publish([("a", "2026-11-01")])
        let file = config()
        let cli = RoutedCLI(route, workspace: workspace)
        defer { cli.stop() }
        try await cli.start(libraryWideOf: file)
        #expect(try await cli.run(["sync", "-q", "--config", file.path]).status == 0)

        for date in ["9999-12-31T23:00:00-05:00", "10000-01-01T00:00:00Z"] {
            publish([("a", "2026-11-01"), ("far", date)])
            let sync = try await cli.run(["sync", "-q", "--config", file.path])
            #expect(sync.status == 1, "\(date): \(sync.stderr)")
            #expect(sync.stderr.contains("issues[1].date: \"\(date)\": "), "\(sync.stderr)")
            #expect(sync.stderr.contains("is outside the dates the library records (years 1 to 9999 in UTC"), "\(sync.stderr)")

            let shelf = try await cli.run(["issues", "--json", "--config", file.path])
            #expect(shelf.status == 0, "\(shelf.stderr)")
            #expect(names(try json(shelf)) == ["a"], "\(date): \(shelf.stdout)")
            let status = try await cli.run(["status", "--json", "--config", file.path])
            #expect(status.status == 0, "\(status.stderr)")
            #expect(names(try json(status)) == ["a"], "\(date): \(status.stdout)")
            let text = try await cli.run(["status", "--config", file.path])
            #expect(text.stdout.contains("\na  2026-11-01  available"), "\(text.stdout)")
        }

        // The last recordable moment is fine, and the shelf orders it first.
        publish([("a", "2026-11-01"), ("far", "9999-12-31T23:59:59Z")])
        let sync = try await cli.run(["sync", "-q", "--config", file.path])
        #expect(sync.status == 0, "\(sync.stderr)")
        let shelf = try await cli.run(["issues", "--json", "--config", file.path])
        #expect(names(try json(shelf)) == ["far", "a"], "\(shelf.stdout)")
        #expect(shelf.stdout.contains("\"9999-12-31\""), "\(shelf.stdout)")

        // `paperboy add --date` is a door too.
        _ = workspace.write(Data("x".utf8), to: "x.pdf")
        let add = try await cli.run(["add", workspace.path("x.pdf").path, "--issue", "later", "--date", "10000-01-01T00:00:00Z",
                                     "--config", file.path])
        #expect(add.status == 64 || add.status == 2, "\(add.stderr)")
        #expect(add.stderr.contains("--date"), "\(add.stderr)")
        #expect(add.stderr.contains("10000-01-01T00:00:00Z is outside the dates the library records"), "\(add.stderr)")
    }

    /// Through a daemon the rows are damaged under it, as another process (or a damaged disk)
    /// would: the commands name them from its replies as in process.
    @Test(arguments: CLIRoute.allCases)
    func aDamagedRowIsNamedWithItsRemovalAndEverythingElseStillWorks(_ route: CLIRoute) async throws {
        publish([("a", "2026-11-01"), ("b", "2026-11-08"), ("c", "2026-11-15")])
        let file = config()
        let cli = RoutedCLI(route, workspace: workspace)
        defer { cli.stop() }
        try await cli.start(libraryWideOf: file)
        #expect(try await cli.run(["sync", "-q", "--config", file.path]).status == 0)
        let database = try DatabaseQueue(path: workspace.path("lib/library.sqlite").path)
        try await database.write { db in
            // What the store could not read back before the date boundary existed, and a state no
            // version of Paperboy writes.
            try db.execute(sql: "UPDATE issue SET date = '10000-01-01 00:00:00.000' WHERE name = 'b'")
            try db.execute(sql: "UPDATE asset SET state = 'bogus' WHERE issueName = 'c'")
        }
        try database.close()

        let shelf = try await cli.run(["issues", "--json", "--config", file.path])
        #expect(shelf.status == 1, "\(shelf.stderr)")
        let document = try json(shelf)
        #expect(names(document) == ["c", "a"], "\(shelf.stdout)")
        let damaged = (document["damagedRows"] as? [[String: Any]]) ?? []
        #expect(damaged.count == 2, "\(shelf.stdout)")
        let issueRow = try #require(damaged.first { $0["table"] as? String == "issue" }, "\(shelf.stdout)")
        #expect(issueRow["key"] as? String == "b")
        #expect(issueRow["column"] as? String == "date")
        #expect(issueRow["value"] as? String == "'10000-01-01 00:00:00.000'")
        let removal = try #require(issueRow["removal"] as? String)
        #expect(removal.hasPrefix("DELETE FROM issue WHERE rowid = "), "\(removal)")
        let assetRow = try #require(damaged.first { $0["table"] as? String == "asset" }, "\(shelf.stdout)")
        #expect(assetRow["column"] as? String == "state")
        #expect(assetRow["value"] as? String == "'bogus'")
        let line = "paperboy: damaged row in \(workspace.path("lib/library.sqlite").path): issue 'b': its date "
            + "'10000-01-01 00:00:00.000' cannot be read; remove the row with: sqlite3 "
        #expect(shelf.stderr.contains(line), "\(shelf.stderr)")

        let text = try await cli.run(["issues", "--config", file.path])
        #expect(text.status == 1)
        #expect(text.stdout.contains("2 issue(s)"), "\(text.stdout)")
        #expect(text.stderr.contains(line), "\(text.stderr)")

        let status = try await cli.run(["status", "--config", file.path])
        #expect(status.status == 1)
        #expect(status.stdout.contains("\nc  2026-11-15  none  new\n  magazine.pdf  failed  7 B  (storage)  its state 'bogus' cannot be read"), "\(status.stdout)")
        #expect(status.stdout.contains("\na  2026-11-01  available  new\n  magazine.pdf  delivered"), "\(status.stdout)")
        #expect(status.stderr.contains(line), "\(status.stderr)")
        #expect(status.stderr.contains("its state 'bogus' cannot be read"), "\(status.stderr)")
        let statusJSON = try await cli.run(["status", "--json", "--config", file.path])
        #expect(statusJSON.status == 1)
        #expect(names(try json(statusJSON)) == ["c", "a"], "\(statusJSON.stdout)")
        #expect(((try json(statusJSON))["damagedRows"] as? [Any])?.count == 2, "\(statusJSON.stdout)")

        let purge = try await cli.run(["purge", "--keep", "0", "--config", file.path])
        #expect(purge.status == 1)
        #expect(purge.stdout.contains("removed a"), "\(purge.stdout)")
        #expect(purge.stderr.contains(line), "\(purge.stderr)")

        // sync goes on with the other issues (c's asset is asked for again, which rewrites its
        // state), and exits 1 naming the damaged issue.
        let sync = try await cli.run(["sync", "-q", "--config", file.path])
        #expect(sync.status == 1)
        #expect(sync.stderr.contains(line), "\(sync.stderr)")
        let after = try json(try await cli.run(["issues", "--json", "--config", file.path]))
        #expect(names(after) == ["c"])
        #expect((after["issues"] as? [[String: Any]])?.first?["status"] as? String == "available", "\(after)")

        // The removal given works: the feed brings the issue back at the next sync.
        let repair = try DatabaseQueue(path: workspace.path("lib/library.sqlite").path)
        try await repair.write { db in try db.execute(sql: removal) }
        try repair.close()
        let clean = try await cli.run(["sync", "-q", "--config", file.path])
        #expect(clean.status == 0, "\(clean.stderr)")
        let repaired = try await cli.run(["issues", "--json", "--config", file.path])
        #expect(repaired.status == 0, "\(repaired.stderr)")
        #expect(names(try json(repaired)) == ["c", "b"], "\(repaired.stdout)")
    }
}
