#if canImport(Glibc)
import Glibc
#endif
import Foundation
import PaperboyTestServers
import PaperboyTesting
import Testing

/// `sync` through a daemon reads the configuration's `[[feeds]]` itself, as in-process, and
/// the daemon downloads their issues.
@Suite("paperboy sync through a daemon: feeds", .serialized, .timeLimit(.minutes(2)))
struct DaemonFeedSyncTests {
    let workspace = Workspace()

    @Test func aSyncThroughTheDaemonReadsItsFeedsAndReportsABrokenOne() async throws {
        let runtime = workspace.path("runtime")
        mkdir(runtime.path, 0o700)
        let daemonConfig = workspace.write("[library]\npath = \"lib\"\n", to: "daemon.toml")
        let content = randomData(30_000, seed: 77)
        _ = workspace.write(content, to: "publisher/content/one.pdf")
        _ = workspace.write("""
            {"issues": [{"name": "one", "date": "2026-11-21", "assets": [{"url": "content/one.pdf", "sha256": "\(sha256Hex(content))", "path": "magazine.pdf"}]}]}
            """, to: "publisher/catalog.json")
        let config = workspace.write("""
            [library]
            path = "lib"

            [[feeds]]
            name = "gazette"
            url = "publisher/catalog.json"

            [[feeds]]
            name = "gone"
            url = "missing/catalog.json"
            """, to: "paperboy.toml")
        let daemon = try await DaemonProcess(config: daemonConfig, runtime: runtime, log: workspace.path("daemon.log"))
        defer { daemon.process.signal(SIGKILL) }
        let environment = ["XDG_RUNTIME_DIR": runtime.path, "PAPERBOY_NETWORK": "wired"]
        let result = try await CLI.run(["sync", "-v", "--config", config.path], environment: environment)
        // The broken feed fails the run (exit 1), as in-process; the good one's issue is delivered.
        #expect(result.status == 1, "\(result.stdout)\n\(result.stderr)")
        #expect(result.stderr.contains("using the daemon"), "\(result.stderr)")
        #expect(!result.stderr.contains("not read by 'sync'"), "\(result.stderr)")
        #expect(result.stderr.contains("feed 'gazette': 1 issue(s), 1 new"), "\(result.stderr)")
        #expect(result.stderr.contains("paperboy: feed 'gone' (\(workspace.path("missing/catalog.json").path)): cannot fetch the catalog"),
                "\(result.stderr)")
        #expect(result.stdout.contains("paperboy: issue one is available"), "\(result.stdout)")
        #expect(Bytes(try Data(contentsOf: workspace.path("lib/Issues/one/magazine.pdf"))) == Bytes(content))

        // Again: nothing new in the feed, nothing to do (the broken feed still fails the run).
        let again = try await CLI.run(["sync", "--config", config.path], environment: environment)
        #expect(again.status == 1)
        #expect(again.stdout.contains("nothing to do; 1 asset(s) already delivered"), "\(again.stdout)")
        _ = await daemon.stop()
    }
}
