import Foundation
import PaperboyTesting
import Testing

/// What `sync` prints while it works: a live block on a terminal, plain log lines on a pipe;
/// the same in process and through a daemon.
@Suite("paperboy progress output", .timeLimit(.minutes(2)))
struct ProgressOutputTests {
    let workspace = Workspace()

    /// Two assets that take about two seconds together under the bandwidth limit (the file
    /// transport reads 1 MiB chunks).
    func slowConfig() -> URL {
        for name in ["one", "two"] {
            _ = workspace.write(Data(repeating: UInt8(ascii: "p"), count: 4_000_000), to: "content/\(name).bin")
        }
        return workspace.write("""
            [library]
            path = "lib"

            [bandwidth]
            limit = "4MB/s"

            [[issues]]
            name = "slow"
            date = 2026-11-21
              [[issues.assets]]
              url = "content/one.bin"
              [[issues.assets]]
              url = "content/two.bin"
            """, to: "paperboy.toml")
    }

    /// A command's runner by `route`; through a daemon, one started on the library and the
    /// limit alone (the issue is the command's to add and follow, not the daemon's own).
    func routed(_ route: CLIRoute) async throws -> RoutedCLI {
        let cli = RoutedCLI(route, workspace: workspace)
        try await cli.start(workspace.write("""
            [library]
            path = "lib"

            [bandwidth]
            limit = "4MB/s"
            """, to: "daemon.toml"))
        return cli
    }

    @Test(arguments: CLIRoute.allCases)
    func aTerminalGetsALiveLinePerTransferAndATotal(_ route: CLIRoute) async throws {
        let file = slowConfig()
        let cli = try await routed(route)
        defer { cli.stop() }
        let result = try await cli.runOnTerminal(["sync", "--config", file.path])
        #expect(result.status == 0, "\(result.stdout)")
        let output = result.stdout
        #expect(output.contains("\u{1B}[2K"), "no line was redrawn")
        #expect(output.contains("slow/one.bin") && output.contains("slow/two.bin"), "\(output)")
        #expect(output.range(of: #"slow/one\.bin +[0-9.]+ (k|M)?B of 4\.0 MB +[0-9]+% +[0-9.]+ (k|M)?B/s"#, options: .regularExpression) != nil,
                "\(output)")
        #expect(output.contains("total: 0/2 delivered") || output.contains("total: 1/2 delivered"), "\(output)")
        #expect(output.contains("limit 4.0 MB/s"))
        #expect(output.range(of: #"ETA [0-9]+ s"#, options: .regularExpression) != nil, "\(output)")
        #expect(output.contains("2 of 2 asset(s) delivered"))
        // No log lines on a terminal by default: the live block says it all.
        #expect(!output.contains(" notice "))
    }

    @Test(arguments: CLIRoute.allCases)
    func aPipeGetsPlainLogLines(_ route: CLIRoute) async throws {
        let file = slowConfig()
        let cli = try await routed(route)
        defer { cli.stop() }
        let result = try await cli.run(["sync", "--verbose", "--config", file.path])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(!result.stdout.contains("\u{1B}[") && !result.stderr.contains("\u{1B}["))
        #expect(!result.stdout.contains("total:"))
        let lines = result.stderr.split(separator: "\n")
        #expect(lines.contains { $0.contains(" info ") && $0.hasSuffix("delivered slow/one.bin (4.0 MB)") }, "\(result.stderr)")
        #expect(lines.contains { $0.contains(" info ") && $0.hasSuffix("downloading slow/two.bin") }, "\(result.stderr)")
        #expect(result.stdout.contains("2 of 2 asset(s) delivered"))

        let quiet = try await cli.run(["sync", "--quiet", "--config", file.path])
        #expect(quiet.status == 0)
        #expect(quiet.stdout.isEmpty && quiet.stderr.isEmpty, "\(quiet.stdout) \(quiet.stderr)")
    }
}
