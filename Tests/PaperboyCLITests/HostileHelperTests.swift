#if canImport(Glibc)
import Glibc
#endif
import Foundation
import GRDB
import PaperboyTesting
import Testing

/// Helpers are not trusted: they get no secrets, and what they say reaches the terminal escaped;
/// in process and through a daemon (issue 27), whose helpers they are (its `[[transports]]` and
/// environment; docs/Daemon.md: transports are library-wide).
@Suite("paperboy sync with a hostile helper", .timeLimit(.minutes(2)))
struct HostileHelperTests {
    let workspace = Workspace()

    /// Records its environment in the file named by its first argument, logs and answers every
    /// request with an `ERROR` whose message holds terminal escapes and a bidi override.
    static let hostileHelper = #"""
        #!/usr/bin/env python3
        import fcntl, json, os, select, struct, sys, termios
        stdin, stdout = sys.stdin.buffer, sys.stdout.buffer

        def read_frame():
            header = stdin.readline()
            if not header:
                sys.exit(0)
            kind, length = header.split()
            return kind.decode(), stdin.read(int(length))

        def send_json(kind, message):
            payload = json.dumps(message).encode()
            stdout.write(b"%s %d\n" % (kind.encode(), len(payload)) + payload)
            stdout.flush()

        with open(sys.argv[1], "w") as file:
            for key, value in os.environ.items():
                file.write(f"{key}={value}\n")
        read_frame()
        send_json("HELLO", {"protocol": 1, "name": "hostile", "schemes": ["hostile"]})
        print("log line \x1b]0;pwned-log\x07 \u202etxt.exe", file=sys.stderr, flush=True)
        # The core's stderr reader logs a line as soon as it has read it: the sync (which ends at
        # the ERROR below) goes on only once the pipe is empty. Looked at every millisecond.
        while struct.unpack("i", fcntl.ioctl(2, termios.FIONREAD, b"\0\0\0\0"))[0] > 0:
            select.select([], [], [], 0.001)
        while True:
            kind, payload = read_frame()
            rid = json.loads(payload)["id"]
            send_json("ERROR", {"id": rid, "code": "not-found", "retryable": False,
                                "message": "gone \x1b]0;pwned\x07 \u202efdp.exe \x9b31m"})
        """#

    func config() -> URL {
        let helper = workspace.write(Self.hostileHelper, to: "hostile-helper")
        chmod(helper.path, 0o755)
        return workspace.write("""
            [library]
            path = "lib"

            [[credentials]]
            match = "https://cdn.example.com/"
            username = "alice"
            password_env = "PAPERBOY_TEST_CDN_PASSWORD"

            [[transports]]
            scheme = "hostile"
            command = ["\(helper.path)", "\(workspace.path("helper.env").path)"]

            [[issues]]
            name = "2026-11-21"
            date = 2026-11-21
              [[issues.assets]]
              url = "hostile://host/file.pdf"
              path = "file.pdf"
            """, to: "paperboy.toml")
    }

    /// Runs `sync` (with `options`) on `file` by `route`, with `environment` (the daemon's too).
    func sync(_ route: CLIRoute, _ file: URL, _ options: [String] = [], environment: [String: String]) async throws -> (CLIResult, RoutedCLI) {
        let cli = RoutedCLI(route, workspace: workspace, daemonEnvironment: environment)
        try await cli.start(libraryWideOf: file)
        return (try await cli.run(["sync"] + options + ["--config", file.path], in: workspace.url, environment: environment), cli)
    }

    @Test(arguments: CLIRoute.allCases)
    func aHelperDoesNotInheritSecretVariablesButKeepsOrdinaryOnes(_ route: CLIRoute) async throws {
        let file = config()
        let (result, cli) = try await sync(route, file, environment: ["PAPERBOY_TEST_CDN_PASSWORD": "hunter2-secret", "PAPERBOY_TEST_PLAIN": "plain"])
        defer { cli.stop() }
        #expect(result.status == 1, "\(result.stderr)")
        let environment = try String(contentsOf: workspace.path("helper.env"), encoding: .utf8)
        #expect(!environment.contains("hunter2-secret"))
        #expect(!environment.contains("PAPERBOY_TEST_CDN_PASSWORD"))
        #expect(environment.contains("PATH="))
        #expect(environment.contains("PAPERBOY_TEST_PLAIN=plain\n"))
    }

    @Test(arguments: CLIRoute.allCases)
    func aHelpersControlCharactersReachTheTerminalEscaped(_ route: CLIRoute) async throws {
        let file = config()
        let (result, cli) = try await sync(route, file, ["--verbose"], environment: ["PAPERBOY_TEST_CDN_PASSWORD": "x"])
        defer { cli.stop() }
        #expect(result.status == 1, "\(result.stderr)")
        for raw: Unicode.Scalar in ["\u{1B}", "\u{07}", "\u{202E}", "\u{9B}"] {
            #expect(!result.stderr.unicodeScalars.contains(raw), "raw U+\(String(raw.value, radix: 16)) in: \(result.stderr)")
            #expect(!result.stdout.unicodeScalars.contains(raw), "raw U+\(String(raw.value, radix: 16)) in: \(result.stdout)")
        }
        // The message stays readable: escapes spelled out, the rest as it was.
        #expect(result.stderr.contains(#"gone \u{1B}]0;pwned\u{7} \u{202E}fdp.exe \u{9B}31m"#), "\(result.stderr)")
        let logLine = #"log line \u{1B}]0;pwned-log\u{7} \u{202E}txt.exe"#
        switch route {
        case .inProcess:
            #expect(result.stderr.contains(logLine), "\(result.stderr)")
        case .daemon:
            // By design: the helper is the daemon's, and so is its standard error, logged by the
            // daemon, escaped the same way (docs/Daemon.md: transports are library-wide).
            #expect(cli.daemonLog.contains(logLine), "\(cli.daemonLog)")
            for raw: Unicode.Scalar in ["\u{1B}", "\u{07}", "\u{202E}", "\u{9B}"] {
                #expect(!cli.daemonLog.unicodeScalars.contains(raw), "raw U+\(String(raw.value, radix: 16)) in: \(cli.daemonLog)")
            }
        }
    }
}

@Suite("paperboy status and issues with hostile names", .timeLimit(.minutes(2)))
struct HostileNameOutputTests {
    let workspace = Workspace()

    /// A value with bidi controls reaches JSON output escaped, and a program reading it gets it
    /// back: here the library's folder, named so by its user. No door takes such an issue name any
    /// more (``IssueName``); a library written before the rule, or a hostile row, may hold one: it
    /// is listed as a damaged row, its name escaped.
    @Test(arguments: CLIRoute.allCases)
    func jsonOutputEscapesBidiControlsButKeepsTheValue(_ route: CLIRoute) async throws {
        let hostile = "a\u{202E}fdp.exe\u{2066}é"
        _ = workspace.write(Data("x".utf8), to: "content/a.pdf")
        let file = workspace.write("""
            [library]
            path = "lib-a\\u202Efdp.exe\\u2066é"
            [[issues]]
            name = "a"
            date = 2026-11-21
              [[issues.assets]]
              url = "content/a.pdf"
            """, to: "paperboy.toml")
        let cli = RoutedCLI(route, workspace: workspace)
        defer { cli.stop() }
        try await cli.start(libraryWideOf: file)
        #expect(try await cli.run(["sync", "-q", "--config", file.path]).status == 0)
        let database = try DatabaseQueue(path: workspace.path("lib-\(hostile)/library.sqlite").path)
        try await database.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA foreign_keys = OFF")
            try db.execute(sql: "UPDATE issue SET name = ? WHERE name = 'a'", arguments: [hostile])
            try db.execute(sql: "UPDATE asset SET issueName = ? WHERE issueName = 'a'", arguments: [hostile])
        }
        try database.close()
        for command in [["status", "--json"], ["issues", "--json"]] {
            let result = try await cli.run(command + ["--config", file.path])
            #expect(result.status == 1, "\(result.stderr)")
            let raw = result.stdout.unicodeScalars
            #expect(!raw.contains { [0x202E, 0x2066].contains($0.value) }, "\(command): \(result.stdout.debugDescription)")
            let json = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
            let damaged = try #require(json["damagedRows"] as? [[String: Any]])
            #expect(damaged.first?["key"] as? String == "a\\u{202E}fdp.exe\\u{2066}é", "\(command)")
            if command[0] == "issues" {
                #expect(result.stdout.contains("\\u202E") && result.stdout.contains("é"), "\(command)")
                // The same value for a program reading it.
                #expect((json["libraryPath"] as? String)?.contains("/lib-\(hostile)") == true, "\(result.stdout)")
            }
        }
        let text = try await cli.run(["issues", "--config", file.path])
        #expect(!text.stdout.unicodeScalars.contains { [0x202E, 0x2066].contains($0.value) }, "\(text.stdout.debugDescription)")
    }
}
