import Foundation
import PaperboyTestServers
import PaperboyTesting
import Testing

/// `paperboy status` while a daemon downloads one file over four connections from its URL and a
/// mirror: the text and `--json` show its pieces and each source's bytes and connections, and
/// nothing of it once delivered.
@Suite("paperboy status: a split download's pieces and sources", .timeLimit(.minutes(2)))
struct StatusSplitTests {
    let workspace = Workspace()

    @Test func statusShowsThePiecesAndSourcesOfADownloadTheDaemonRuns() async throws {
        let data = try await generated(40 << 20, seed: 442)
        // Every answer sends 1 MiB, then waits for the test: the figures hold still to be read.
        let held = try HeldSources(serving: data)
        defer { held.stop() }
        let url = held.url.absoluteString, mirrorURL = held.mirrorURL.absoluteString
        // A mirror silent for 1/120 of the idle timeout is dropped: the holds must not be.
        let file = workspace.write("""
            [library]
            path = "lib"
            [scheduler]
            connections_per_asset = 4
            idle_timeout = "2h"
            [[issues]]
            name = "a"
            date = 2026-11-21
              [[issues.assets]]
              url = "\(url)"
              sha256 = "\(sha256Hex(data))"
              path = "big.bin"
              mirrors = ["\(mirrorURL)"]
            """, to: "paperboy.toml")
        let cli = RoutedCLI(.daemon, workspace: workspace)
        defer { cli.stop() }
        try await cli.start(libraryWideOf: file)
        let sync = Task { try await cli.run(["sync", "--config", file.path]) }

        // Connections 0 and 2 ask the URL, 1 and 3 the mirror; each wrote 1 MiB and waits.
        var text = ""
        try await eventually("status to show both sources, 2 connections each", seen: text) {
            text = try await cli.run(["status", "--config", file.path]).stdout
            let lines = text.split(separator: "\n")
            return lines.contains { $0.contains("pieces 0 of ") }
                && lines.contains { $0.hasPrefix("    from \(url)  ") && $0.hasSuffix("  2 connections") }
                && lines.contains { $0.hasPrefix("    from \(mirrorURL)  ") && $0.hasSuffix("  2 connections") }
        }
        let json = try await cli.run(["status", "--json", "--config", file.path])
        let document = try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any]
        let asset = ((document?["issues"] as? [[String: Any]])?.first?["assets"] as? [[String: Any]])?.first
        let split = asset?["split"] as? [String: Any]
        let sources = split?["sources"] as? [[String: Any]] ?? []
        #expect(sources.map { $0["url"] as? String } == [url, mirrorURL], "\(json.stdout)")
        #expect(sources.map { $0["bytes"] as? Int } == [2 << 20, 2 << 20], "\(json.stdout)")
        #expect(sources.map { $0["connections"] as? Int } == [2, 2], "\(json.stdout)")
        #expect(sources.map { $0["dropped"] as? Bool } == [false, false], "\(json.stdout)")
        #expect((split?["pieces"] as? Int ?? 0) >= 4 && split?["piecesDone"] as? Int == 0, "\(json.stdout)")

        held.release()
        let result = try await sync.value
        #expect(result.status == 0, "\(result.stderr)")
        let after = try await cli.run(["status", "--json", "--config", file.path])
        #expect(after.stdout.contains("\"delivered\"") && !after.stdout.contains("\"split\""), "\(after.stdout)")
    }
}
