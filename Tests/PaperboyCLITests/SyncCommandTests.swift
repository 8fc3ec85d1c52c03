import Foundation
import PaperboyTestServers
import PaperboyTesting
import Testing

@Suite("paperboy sync and status", .timeLimit(.minutes(2)))
struct SyncCommandTests {
    let workspace = Workspace()

    func makeContent() -> (Data, Data) {
        // Generated in one pass: byte by byte (one getrandom call each) it kept a thread of the
        // test pool busy long enough to stall other tests on a loaded machine.
        let pdf = randomData(300_000, seed: 9)
        let cover = Data("cover".utf8)
        _ = workspace.write(pdf, to: "content/issue.pdf")
        _ = workspace.write(cover, to: "content/cover.png")
        return (pdf, cover)
    }

    func config(sha: String, extra: String = "") -> URL {
        workspace.write("""
            [library]
            path = "lib"

            [[issues]]
            name = "2026-11-21"
            date = 2026-11-21
              [[issues.assets]]
              url = "content/issue.pdf"
              sha256 = "\(sha)"
              path = "magazine.pdf"
              [[issues.assets]]
              url = "content/cover.png"
            \(extra)
            """, to: "paperboy.toml")
    }

    @Test(arguments: CLIRoute.allCases)
    func syncDeliversThenDoesNothingTheSecondTime(_ route: CLIRoute) async throws {
        let (pdf, cover) = makeContent()
        let cli = RoutedCLI(route, workspace: workspace)
        defer { cli.stop() }
        // The daemon starts on the library alone: the issues are the sync's to add, not its own.
        try await cli.start(workspace.write("[library]\npath = \"lib\"\n", to: "paperboy.toml"))
        let file = config(sha: sha256Hex(pdf))
        let first = try await cli.run(["sync", "--config", file.path])
        #expect(first.status == 0, "\(first.stderr)")
        #expect(first.stdout.contains("2 of 2 asset(s) delivered"))
        let delivered = workspace.path("lib/Issues/2026-11-21/magazine.pdf")
        #expect(try Bytes(Data(contentsOf: delivered)) == Bytes(pdf))
        #expect(try Bytes(Data(contentsOf: workspace.path("lib/Issues/2026-11-21/cover.png"))) == Bytes(cover))
        let inode = try FileManager.default.attributesOfItem(atPath: delivered.path)[.systemFileNumber] as? Int

        let second = try await cli.run(["sync"], in: workspace.url)
        #expect(second.status == 0, "\(second.stderr)")
        #expect(second.stdout.contains("nothing to do; 2 asset(s) already delivered"))
        #expect(try FileManager.default.attributesOfItem(atPath: delivered.path)[.systemFileNumber] as? Int == inode)
    }

    @Test(arguments: CLIRoute.allCases)
    func statusJSONDescribesTheLibrary(_ route: CLIRoute) async throws {
        let (pdf, _) = makeContent()
        let file = config(sha: sha256Hex(pdf))
        let cli = RoutedCLI(route, workspace: workspace)
        defer { cli.stop() }
        try await cli.start(file)
        let before = try await cli.run(["status", "--json", "--config", file.path])
        #expect(before.status == 0)
        #expect(before.stdout.contains("\"issues\" : ["))
        #expect(try await cli.run(["sync", "-q", "--config", file.path]).status == 0)
        let result = try await cli.run(["status", "--json", "--config", file.path])
        #expect(result.status == 0, "\(result.stderr)")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        let issues = try #require(json["issues"] as? [[String: Any]])
        #expect(issues.count == 1)
        #expect(issues[0]["name"] as? String == "2026-11-21")
        #expect(issues[0]["date"] as? String == "2026-11-21")
        #expect(issues[0]["status"] as? String == "available")
        #expect((issues[0]["contentPath"] as? String)?.hasSuffix("lib/Issues/2026-11-21") == true)
        let assets = try #require(issues[0]["assets"] as? [[String: Any]])
        #expect(assets.count == 2)
        #expect(assets[0]["state"] as? String == "delivered")
        #expect(assets[0]["bytesWritten"] as? Int == pdf.count)
        #expect(assets[0]["expectedBytes"] as? Int == pdf.count)
        #expect(assets[0]["path"] as? String == "magazine.pdf")
        #expect(assets[1]["path"] as? String == "cover.png")
        #expect((assets[0]["url"] as? String)?.hasSuffix("content/issue.pdf") == true)
        #expect(assets[0]["id"] is String)
    }

    @Test(arguments: CLIRoute.allCases)
    func failedAssetsAreReportedOneLineEachWithExitCode1(_ route: CLIRoute) async throws {
        let (pdf, _) = makeContent()
        let file = config(sha: String(repeating: "0", count: 64), extra: """
              [[issues.assets]]
              url = "content/missing.pdf"
            """)
        let cli = RoutedCLI(route, workspace: workspace)
        defer { cli.stop() }
        try await cli.start(libraryWideOf: file)
        let result = try await cli.run(["sync", "--config", file.path])
        #expect(result.status == 1)
        let lines = result.stderr.split(separator: "\n").filter { $0.hasPrefix("failed: ") }
        #expect(lines.count == 2, "\(result.stderr)")
        #expect(lines.contains { $0.contains("2026-11-21/magazine.pdf") && $0.contains("SHA-256") && $0.contains(sha256Hex(pdf)) })
        #expect(lines.contains { $0.contains("2026-11-21/missing.pdf") && $0.contains("no such file") })
        // The good asset was still delivered; the bad one left nothing behind.
        #expect(FileManager.default.fileExists(atPath: workspace.path("lib/Issues/2026-11-21/cover.png").path))
        #expect(!FileManager.default.fileExists(atPath: workspace.path("lib/Issues/2026-11-21/magazine.pdf").path))
    }

    @Test(arguments: CLIRoute.allCases)
    func aCorrectedChecksumTakesEffectOnTheNextSync(_ route: CLIRoute) async throws {
        let (pdf, _) = makeContent()
        let wrong = String(repeating: "0", count: 64)
        let cli = RoutedCLI(route, workspace: workspace)
        defer { cli.stop() }
        let first = try await cli.run(["sync", "--config", config(sha: wrong).path])
        #expect(first.status == 1)
        #expect(first.stderr.contains("expected \(wrong)"), "\(first.stderr)")
        // The publisher fixes the checksum (upper case, as some write it): the same asset now
        // downloads again under the new one instead of failing on every sync.
        let second = try await cli.run(["sync", "--config", config(sha: sha256Hex(pdf).uppercased()).path])
        #expect(second.status == 0, "\(second.stderr)")
        #expect(try Bytes(Data(contentsOf: workspace.path("lib/Issues/2026-11-21/magazine.pdf"))) == Bytes(pdf))
        let status = try await cli.run(["status", "--json", "--config", config(sha: sha256Hex(pdf)).path])
        let json = try #require(try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any])
        let assets = try #require((json["issues"] as? [[String: Any]])?.first?["assets"] as? [[String: Any]])
        #expect(assets.count == 2, "the corrected asset was not added a second time")
        // A wrong checksum for a delivered asset changes nothing: it is not downloaded again.
        let third = try await cli.run(["sync", "--config", config(sha: wrong).path])
        #expect(third.status == 0, "\(third.stderr)")
        #expect(third.stdout.contains("nothing to do; 2 asset(s) already delivered"), "\(third.stdout)")
    }

    /// Whether a refused configuration wrote nothing: no library in process; through a daemon
    /// (which made its library when it started), no issue folder.
    func nothingWritten(_ route: CLIRoute) -> Bool {
        !FileManager.default.fileExists(atPath: workspace.path(route == .inProcess ? "lib" : "lib/Issues/a").path)
    }

    /// A runner by `route` whose daemon serves the library alone (`daemon.toml`).
    func routed(_ route: CLIRoute) async throws -> RoutedCLI {
        let cli = RoutedCLI(route, workspace: workspace)
        try await cli.start(workspace.write("[library]\npath = \"lib\"\n", to: "daemon.toml"))
        return cli
    }

    /// Through a daemon too: the configuration is refused before the command reaches it (the
    /// daemon's library stays empty).
    @Test(arguments: CLIRoute.allCases)
    func aMalformedURLIsAConfigurationErrorNamingFileLineAndKey(_ route: CLIRoute) async throws {
        let cli = try await routed(route)
        defer { cli.stop() }
        let good = workspace.write("[library]\npath = \"lib\"\n", to: "good.toml")
        let file = workspace.write("""
            [library]
            path = "lib"
            [[issues]]
            name = "a"
            date = 2026-11-21
              [[issues.assets]]
              url = "ht tp://bad url"
              path = "a.pdf"
            """, to: "paperboy.toml")
        let result = try await cli.run(["sync", "--config", file.path])
        #expect(result.status == 2, "\(result.stderr)")
        #expect(result.stderr.contains("paperboy.toml:7:"), "\(result.stderr)")
        #expect(result.stderr.contains("issues[0].assets[0].url"), "\(result.stderr)")
        #expect(nothingWritten(route))
        let added = try await cli.run(["add", "ht tp://bad url", "--issue", "a", "--config", good.path])
        #expect(added.status != 0)
        #expect(added.stderr.contains("malformed URL"), "\(added.stderr)")
        let shelf = try await cli.run(["issues", "--json", "--config", good.path])
        #expect(shelf.status == 0, "\(shelf.stderr)")
        let json = try JSONSerialization.jsonObject(with: Data(shelf.stdout.utf8)) as? [String: Any]
        #expect((json?["issues"] as? [Any])?.isEmpty == true, "\(shelf.stdout)")
    }

    /// Through a daemon too: the file is refused before the command reaches it.
    @Test(arguments: [
        ("[library]\npath = \"lib\"\n[[issues]]\nname = \"a\"\ndate = 2026-11-21\n  [[issues.assets]]\n  url = \"x\"\n  sha256 = \"abc\"\n", ":8:", "sha256"),
        ("[library]\npath = \"lib\"\n[schedular]\nmax_concurrent = 2\n", ":3:", "scheduler"),
        ("[library]\npath = \"lib\"\n[scheduler]\nmax_concurent = 2\n", ":4:", "max_concurrent"),
        ("[library]\npath = \"lib\"\n[scheduler]\nmax_concurrent = \"two\"\n", ":4:", "max_concurrent"),
        ("[library]\npath = \"lib\"\n[[issues]]\nname = \"a\"\ndate = 2026-11-21\n[[issues]]\nname = \"a\"\ndate = 2026-11-22\n", ":7:", "duplicate issue name"),
        ("[library\npath = \"lib\"\n", ":1", "paperboy.toml"),
        ("[library]\npath = \"lib\"\n[[issues]]\nname = \"a\"\ndate = 2026-11-21\n  [[issues.assets]]\n  url = \"x\"\n  path = \"../out\"\n", ":8:", "path"),
        ("[library]\npath = \"lib\"\n[[credentials]]\nmatch = \"https://cdn.example.com/\"\npassword_env = \"PAPERBOY_TEST_UNSET_VARIABLE\"\n", ":5:", "PAPERBOY_TEST_UNSET_VARIABLE"),
    ], CLIRoute.allCases)
    func configErrorsExitWith2AndWriteNothing(_ error: (text: String, line: String, mention: String), _ route: CLIRoute) async throws {
        let cli = try await routed(route)
        defer { cli.stop() }
        let file = workspace.write(error.text, to: "paperboy.toml")
        let result = try await cli.run(["sync", "--config", file.path])
        #expect(result.status == 2, "\(result.stdout) \(result.stderr)")
        #expect(result.stderr.contains("paperboy.toml\(error.line)"), "\(result.stderr)")
        #expect(result.stderr.contains(error.mention), "\(result.stderr)")
        #expect(nothingWritten(route))
    }

    /// A `[[credentials]]` secret file the command cannot read (no longer UTF-8) is a
    /// configuration error both ways, even when a daemon (which read it when it started) holds
    /// the library and no feed needs it.
    @Test(arguments: CLIRoute.allCases)
    func aSecretFileThatCannotBeReadExitsWith2BothWays(_ route: CLIRoute) async throws {
        let (pdf, _) = makeContent()
        let secret = workspace.write("s3cr3t-value\n", to: "secret.txt")
        let file = config(sha: sha256Hex(pdf), extra: """
            [[credentials]]
            match = "https://cdn.example.com/"
            username = "reader"
            password_file = "\(secret.path)"
            """)
        let cli = RoutedCLI(route, workspace: workspace)
        defer { cli.stop() }
        try await cli.start(file)
        try Data([0xFF, 0xFE, 0x00]).write(to: secret)
        let result = try await cli.run(["sync", "--config", file.path])
        #expect(result.status == 2, "\(result.stdout) \(result.stderr)")
        #expect(result.stderr.contains("secret file '\(secret.path)' is not UTF-8"), "\(result.stderr)")
        #expect(!result.stderr.contains("s3cr3t"), "\(result.stderr)")
    }

    @Test func missingConfigurationAndBadUsageExitWith2() async throws {
        let none = try await CLI.run(["sync"], in: workspace.url, environment: ["XDG_CONFIG_HOME": workspace.path("xdg").path])
        #expect(none.status == 2)
        #expect(none.stderr.contains("no configuration file"))
        let badFlag = try await CLI.run(["sync", "--no-such-flag"])
        #expect(badFlag.status == 2)
        let badCommand = try await CLI.run(["fly"])
        #expect(badCommand.status == 2)
    }
}

/// `[scheduler] idle_timeout` in the `paperboy` process: a real-time test (the decision is the
/// core's, tested on a test clock there), serialized, with bounds for a loaded 2-core machine.
@Suite("paperboy sync: the idle timeout in real time", .serialized, .timeLimit(.minutes(2)))
struct SyncIdleTimeoutTests {
    let workspace = Workspace()

    /// `[scheduler]` is library-wide: through a daemon, the daemon's configuration's.
    @Test(arguments: CLIRoute.allCases)
    func aStalledTransferTimesOutAfterTheConfiguredIdleTimeoutAndIsRetried(_ route: CLIRoute) async throws {
        let data = randomData(200_000, seed: 4)
        // The first request stalls after 10,000 bytes; the second is served whole.
        let server = try FaultServer { request in
            .serving(data, for: request, fault: request.index == 0 ? .stallAfter(10_000) : .none)
        }
        let file = workspace.write("""
            [library]
            path = "lib"
            [scheduler]
            idle_timeout = "2s"
            connect_timeout = "2s"
            retry_attempts = 2
            retry_base_delay = "200ms"
            [[issues]]
            name = "a"
            date = 2026-11-21
              [[issues.assets]]
              url = "\(server.url("/slow.bin").absoluteString)"
            """, to: "paperboy.toml")
        let cli = RoutedCLI(route, workspace: workspace)
        defer { cli.stop() }
        try await cli.start(libraryWideOf: file)
        let result = try await cli.run(["sync", "-v", "--config", file.path])
        #expect(result.status == 0, "\(result.stderr)")
        // The stall was found by the configured 2 s, not the default 60 s: the library's log of
        // the failed attempt says so, the command's with -v, else the daemon's (no wall-clock
        // bound: a loaded machine once stretched this run past 45 s).
        let log = route == .daemon ? cli.daemonLog : result.stderr
        #expect(log.contains("nothing received for 2 s"), "\(log)")
        #expect(server.requests.count == 2)
        let delivered = try Data(contentsOf: workspace.path("lib/Issues/a/slow.bin"))
        #expect(sha256Hex(delivered) == sha256Hex(data))
        // A retry 0.1-0.2 s away is not announced as "in 1 s" (and, after progress, is the first again).
        #expect(result.stderr.contains("retry 1 in 0."), "\(result.stderr)")
    }
}
