#if canImport(Glibc)
import Glibc
#endif
import Foundation
import PaperboyTestServers
@testable import paperboy
import PaperboyTesting
import Testing

/// `paperboy check`, and the daemon reading a new configuration in a child process first: a file
/// that aborts the TOML parser (toml++'s assertions, docs/Security.md) ends the child, and the
/// daemon goes on with the configuration it had.
@Suite("paperboy check, and a reload that would abort the parser", .serialized, .timeLimit(.minutes(3)))
struct ConfigurationCheckTests {
    let workspace = Workspace()

    @Test func checkSaysValidOrNamesTheLineAndExitsWithTwo() async throws {
        let good = workspace.write("""
            [library]
            path = "lib"
            [[issues]]
            name = "2026-11-21"
            date = 2026-11-21T06:00:00Z
            assets = [{ url = "file:///tmp/a.pdf" }]
            """, to: "good.toml")
        let valid = try await CLI.run(["check", "--config", good.path])
        #expect(valid.status == 0, "\(valid.stderr)")
        #expect(valid.stdout == "\(good.path): valid; 1 issue(s), 0 feed(s)\n")

        let bad = workspace.write("[library]\npath = \"lib\"\n[scheduler]\nmax_concurrent = 0\n", to: "bad.toml")
        let invalid = try await CLI.run(["check", "--config", bad.path])
        #expect(invalid.status == 2)
        #expect(invalid.stdout.isEmpty)
        #expect(invalid.stderr.contains("bad.toml:4"), "\(invalid.stderr)")
    }

    @Test func aReloadOfAFileThatAbortsTheParserLeavesTheDaemonRunningWithItsConfiguration() async throws {
        let runtime = workspace.path("runtime")
        mkdir(runtime.path, 0o700)
        let text = "[library]\npath = \"lib\"\n"
        let config = workspace.write(text, to: "paperboy.toml")
        let daemon = try await DaemonProcess(config: config, runtime: runtime, log: workspace.path("daemon.log"))
        defer { daemon.process.signal(SIGKILL) }
        let log = { (try? String(contentsOf: daemon.log, encoding: .utf8)) ?? "" }

        // `[=]`: toml++ 3.4.0 asserts in parse_key(); in this process it would end the daemon.
        _ = workspace.write(text + "[=]\n", to: "paperboy.toml")
        daemon.process.signal(SIGHUP)
        try await eventually("the reload to fail", seen: log()) { log().contains("reload failed") }
        #expect(log().contains("stops the TOML parser (signal 6, SIGABRT"), "\(log())")
        #expect(daemon.process.isRunning)

        // The daemon still reloads: a fixed file adds its issue.
        _ = workspace.write(text + """
            [[issues]]
            name = "2026-11-21"
            date = 2026-11-21T06:00:00Z
            assets = []
            """, to: "paperboy.toml")
        daemon.process.signal(SIGHUP)
        try await eventually("the second reload", seen: log()) { log().contains("reloaded; 1 new issue(s)") }
        _ = await daemon.stop()
        #expect(daemon.process.terminationReason == .exit && daemon.process.terminationStatus == 0, "\(log())")
    }

    /// A `*_env` secret is found by the child as the daemon finds it (its value stays out of the
    /// child's environment): a reload of a configuration with credentials goes through.
    @Test func aReloadOfAConfigurationWithASecretFromTheEnvironmentGoesThrough() async throws {
        let runtime = workspace.path("runtime")
        mkdir(runtime.path, 0o700)
        let text = """
            [library]
            path = "lib"
            [[credentials]]
            match = "https://example.com"
            username = "reader"
            password_env = "PAPERBOY_TEST_SECRET"

            """
        let config = workspace.write(text, to: "paperboy.toml")
        let daemon = try await DaemonProcess(config: config, runtime: runtime, log: workspace.path("daemon.log"),
                                             environment: ["PAPERBOY_TEST_SECRET": "s3cret-value"])
        defer { daemon.process.signal(SIGKILL) }
        let log = { (try? String(contentsOf: daemon.log, encoding: .utf8)) ?? "" }
        _ = workspace.write(text + """
            [[issues]]
            name = "2026-11-21"
            date = 2026-11-21T06:00:00Z
            assets = []
            """, to: "paperboy.toml")
        daemon.process.signal(SIGHUP)
        try await eventually("the reload", seen: log()) { log().contains("reloaded; 1 new issue(s)") || log().contains("reload failed") }
        #expect(log().contains("reloaded; 1 new issue(s)"), "\(log())")
        #expect(!log().contains("s3cret-value"))
        _ = await daemon.stop()
    }

    @Test func theChildKeepsPathVariablesAndBlanksTheRest() {
        let child = ConfigurationPreflight.childEnvironment(["HOME": "/home/r", "PAPERBOY_TEST_SECRET": "s3cret", "PATH": "/bin"])
        #expect(child["HOME"] == "/home/r" && child["PATH"] == "/bin")
        #expect(child["PAPERBOY_TEST_SECRET"] == "")
    }
}
