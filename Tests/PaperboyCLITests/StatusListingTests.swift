import Foundation
import GRDB
import PaperboyTestServers
import PaperboyTesting
import Testing

/// `paperboy status` reads assets a page (1,000) at a time and writes as it reads: an issue
/// longer than a page is listed whole, in the order its assets were added, in text and JSON;
/// in process and through a daemon (which `status` reads with `ASSETS` pages, docs/Daemon.md).
@Suite("paperboy status, page by page", .timeLimit(.minutes(3)))
struct StatusListingTests {
    let workspace = Workspace()

    /// Through a daemon `sync` adds a batch with one `ADDASSETS` (issue 27): no asset is
    /// delivered before the batch is whole, so the issue is not counted complete (nor marked new)
    /// mid-way, as it was with one `ADDASSET` per asset.
    @Test(arguments: CLIRoute.allCases)
    func anIssueLongerThanAPageIsListedWholeAndInOrder(_ route: CLIRoute) async throws {
        let count = 1_003
        var assets = ""
        for index in 0..<count {
            let name = String(format: "a%04d.txt", index)
            // The one past the first page fails: its state and error come from the second page.
            if index != 1_001 { _ = workspace.write(Data("asset \(index)\n".utf8), to: "content/\(name)") }
            assets += "  [[issues.assets]]\n  url = \"content/\(name)\"\n"
        }
        let file = workspace.write("""
            [library]
            path = "lib"
            sync_to_disk = false
            [scheduler]
            retry_attempts = 1
            [[issues]]
            name = "big"
            date = 2026-11-21
            \(assets)
            [[issues]]
            name = "empty"
            date = 2026-11-20
            """, to: "paperboy.toml")
        let cli = RoutedCLI(route, workspace: workspace)
        defer { cli.stop() }
        try await cli.start(libraryWideOf: file)
        #expect(try await cli.run(["sync", "-q", "--config", file.path]).status == 1)

        let result = try await cli.run(["status", "--json", "--config", file.path])
        #expect(result.status == 0, "\(result.stderr)")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        let issues = try #require(json["issues"] as? [[String: Any]])
        #expect(issues.map { $0["name"] as? String } == ["big", "empty"])
        #expect(issues.map { $0["status"] as? String } == ["none", "none"])
        let listed = try #require(issues[0]["assets"] as? [[String: Any]])
        #expect(listed.map { $0["path"] as? String } == (0..<count).map { String(format: "a%04d.txt", $0) })
        #expect(Set(listed.map { $0["id"] as? String }).count == count)
        #expect(listed[1_001]["state"] as? String == "failed")
        #expect((listed[1_001]["error"] as? String)?.contains("a1001.txt") == true)
        #expect(listed.enumerated().allSatisfy { $0.offset == 1_001 || $0.element["state"] as? String == "delivered" })
        #expect((issues[1]["assets"] as? [Any])?.isEmpty == true)
        #expect(json["libraryPath"] as? String == workspace.path("lib").path)

        let text = try await cli.run(["status", "--config", file.path])
        #expect(text.status == 0, "\(text.stderr)")
        var lines = text.stdout.split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines.first == "library \(workspace.path("lib").path)")
        // The limiter's statistics are recorded about once a second: a short sync may leave none.
        if lines.count > 1, lines[1].hasPrefix("bandwidth: ") {
            #expect(lines[1].hasPrefix("bandwidth: limit unlimited"))
        } else {
            lines.insert("bandwidth: (none recorded)", at: 1)
        }
        #expect(lines[2] == "big  2026-11-21  none")
        #expect(lines[3] == "  a0000.txt  delivered  8 B")
        #expect(lines[3 + 1_001].hasPrefix("  a1001.txt  failed  0 B  "))
        #expect(lines[3 + count] == "empty  2026-11-20  none")
        #expect(lines.count == 3 + count + 2)   // and the final newline

        let shelf = try await cli.run(["issues", "--config", file.path])
        #expect(shelf.stdout.contains("big") && shelf.stdout.contains("2 issue(s), 0 new"), "\(shelf.stdout)")
    }

    /// A library whose assets cannot be read is an error (exit 1, the database's message), not
    /// a listing of issues without assets.
    @Test(arguments: CLIRoute.allCases)
    func aLibraryWhoseAssetsCannotBeReadIsAnErrorNotAnEmptyListing(_ route: CLIRoute) async throws {
        _ = workspace.write(Data("one\n".utf8), to: "content/a.txt")
        let file = workspace.write("""
            [library]
            path = "lib"
            sync_to_disk = false
            [[issues]]
            name = "i"
            date = 2026-11-21
              [[issues.assets]]
              url = "content/a.txt"
            """, to: "paperboy.toml")
        let cli = RoutedCLI(route, workspace: workspace)
        defer { cli.stop() }
        try await cli.start(libraryWideOf: file)
        #expect(try await cli.run(["sync", "-q", "--config", file.path]).status == 0)
        let database = try DatabaseQueue(path: workspace.path("lib/library.sqlite").path)
        // The state: every read of assets needs it (an issue's status on the shelf needs no more).
        try await database.write { db in try db.execute(sql: "ALTER TABLE asset RENAME COLUMN state TO damaged") }
        try database.close()
        for arguments in [["status"], ["status", "--json"], ["issues"]] {
            let result = try await cli.run(arguments + ["--config", file.path])
            #expect(result.status == 1, "\(arguments): \(result.stdout)")
            #expect(result.stderr.contains("no such column"), "\(arguments): \(result.stderr)")
        }
    }
}
