import Foundation
import PaperboyTestServers
import PaperboyTesting
import Testing

/// The same commands on the same configuration give the same output and exit code in process
/// and through a daemon (issue 27: byte-identical both ways). Only what must differ is
/// normalized: the workspace's path (each route has its own) and timing figures.
/// Fifteen `paperboy` processes one after another, each waiting for one of the test process's
/// slots (``ProcessSlots``) behind the other suites' processes: in a full run on a loaded 2-core
/// machine this test went past a 2-minute limit without a command failing (alone it takes a
/// second or two). The two transcripts now run side by side, a command that hangs is named
/// (``CLI/commandTimeLimit``), and the limit guards against hangs only.
@Suite("paperboy output is the same both ways", .timeLimit(.minutes(4)))
struct RouteParityTests {
    /// Each route's transcript of `add`, `sync` (a delivered asset, and a missing one in another issue), `status`
    /// and `issues` on its own workspace.
    func transcript(_ route: CLIRoute) async throws -> [String] {
        let workspace = Workspace()
        _ = workspace.write(randomData(200_000, seed: 31), to: "content/issue.pdf")
        _ = workspace.write(Data("cover".utf8), to: "content/cover.png")
        let cli = RoutedCLI(route, workspace: workspace)
        defer { cli.stop() }
        // The daemon starts on the library alone: the issues are the commands' to add.
        let file = workspace.write("[library]\npath = \"lib\"\n", to: "paperboy.toml")
        try await cli.start(file)
        _ = workspace.write("""
            [library]
            path = "lib"

            [[issues]]
            name = "2026-11-21"
            date = 2026-11-21
              [[issues.assets]]
              url = "content/issue.pdf"
              path = "magazine.pdf"

            # The missing asset in an issue of its own: an issue whose failed asset settles
            # before its delivered one is marked new, after it not (a race of the library's own,
            # whichever process holds it).
            [[issues]]
            name = "2026-11-20"
            date = 2026-11-20
              [[issues.assets]]
              url = "content/missing.pdf"
            """, to: "paperboy.toml")
        var lines: [String] = []
        for arguments in [["sync"], ["sync"], ["add", workspace.path("content/cover.png").path, "--issue", "2026-11-22", "--date", "2026-11-22"],
                          ["status"], ["status", "--json"], ["issues"], ["issues", "--json"]] {
            let result = try await cli.run(arguments + ["--config", file.path])
            lines.append("$ \(arguments.joined(separator: " ")) → \(result.status)\n\(result.stdout)\(result.stderr)")
        }
        return lines.map { Self.normalized($0, workspace: workspace.url.path) }
    }

    /// `text` with the workspace's path as `WS`, asset identifiers (random UUIDs) as `ID`,
    /// durations and rates as `T`, and without the bandwidth statistics: those are what the
    /// process holding the library recorded last (about once a second), so whether the
    /// daemon's record already holds the sync's bytes is a matter of timing.
    static func normalized(_ text: String, workspace: String) -> String {
        var text = text.replacingOccurrences(of: workspace, with: "WS")
        let patterns = [
            (#"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"#, "ID"),
            (#"[0-9]+(\.[0-9]+)? ?(ms|s|min|h)\b"#, "T"),
            (#"[0-9]+(\.[0-9]+)? ?[KMG]?i?B/s"#, "T"),
            (#"[0-9]+(\.[0-9]+)? assets/s"#, "T"),
            (#"(?m)^bandwidth: .*\n"#, ""),
            (#"  "bandwidth" : \{[^}]*\},\n"#, ""),
        ]
        for (pattern, replacement) in patterns {
            text = text.replacingOccurrences(of: pattern, with: replacement, options: .regularExpression)
        }
        return text
    }

    @Test func syncAddStatusAndIssuesPrintTheSameAndExitTheSameBothWays() async throws {
        async let local = transcript(.inProcess)
        async let served = transcript(.daemon)
        let (inProcess, daemon) = try await (local, served)
        #expect(inProcess.count == daemon.count)
        #expect(inProcess.first?.hasPrefix("$ sync → 1\n") == true, "the missing asset fails: \(inProcess.first ?? "")")
        for (local, served) in zip(inProcess, daemon) {
            #expect(local == served)
        }
    }
}
