import Foundation
import PaperboyTestServers
import PaperboyTesting
import Testing

/// `paperboy sync` with an FTP-like helper: one login per helper process and host, raised as a
/// challenge of a kind the core has never heard of (`ftp-password`), answered from
/// `[[credentials]]`; transport options from the configuration reach its `FETCH`. In process and
/// through a daemon (issue 27), whose `[[transports]]`, `[[credentials]]`, `[scheduler]` and
/// environment start and answer the helpers (library-wide, docs/Daemon.md).
@Suite("Helper sessions, options and challenges of any kind", .timeLimit(.minutes(2)))
struct HelperSessionTests {
    let workspace = Workspace()

    /// Logs every `FETCH` (url, options, pid), every `ANSWER` (disposition, user, whether a
    /// password came: never the password) and every login to the file of argument 2, as JSON lines.
    ///
    /// With `FTPLIKE_LOGINS=N`, a helper serves nothing before N logins are logged (looked at
    /// every 5 ms, for at most 30 s): the first transfers are then all in flight at once, each
    /// in a helper of its own, whatever the machine's pace.
    static let helper = #"""
        #!/usr/bin/env python3
        import json, os, select, sys, time
        inp, out = sys.stdin.buffer, sys.stdout.buffer
        root, log_path, expected_user, expected_password = sys.argv[1:5]
        logins_awaited = int(os.environ.get("FTPLIKE_LOGINS", "0"))
        \#(pythonFraming)
        def log(event):
            with open(log_path, "a") as file:
                file.write(json.dumps(event) + "\n")
        def logins():
            with open(log_path) as file:
                return sum(1 for line in file if '"login"' in line)
        def await_logins():
            deadline = time.monotonic() + 30
            while logins() < logins_awaited and time.monotonic() < deadline:
                select.select([], [], [], 0.005)
        sessions = set()
        read_frame()
        send_json("HELLO", {"protocol": 1, "name": "ftplike", "schemes": ["ftplike"], "capabilities": ["challenges"]})
        while True:
            _, request = read_frame()
            rid, url = request["id"], request["url"]
            host, _, path = url.split("://", 1)[1].partition("/")
            log({"fetch": url, "options": request.get("options"), "pid": os.getpid()})
            if host not in sessions:
                failures, user = 0, None
                while failures < 3:
                    send_json("CHALLENGE", {"id": rid, "kind": "ftp-password", "realm": host, "previous_failures": failures})
                    _, answer = read_frame()
                    credential = answer.get("credential") or {}
                    user = credential.get("user") or user
                    log({"answer": answer["disposition"], "user": user, "has_password": bool(credential.get("password")),
                         "previous_failures": failures})
                    if answer["disposition"] != "use-credential":
                        break
                    if user == expected_user and credential.get("password") == expected_password:
                        sessions.add(host)
                        log({"login": host, "pid": os.getpid()})
                        break
                    failures += 1
                if host not in sessions:
                    send_json("ERROR", {"id": rid, "code": "authentication-failed", "message": f"login as {user} refused"})
                    continue
            await_logins()
            marker = os.path.join(os.path.dirname(log_path), "tried-" + path)
            if os.environ.get("FTPLIKE_DROP_FIRST") == "1" and not os.path.exists(marker):
                open(marker, "w").close()
                send_json("ERROR", {"id": rid, "code": "connection-lost", "message": "data connection dropped", "retryable": True})
                continue
            with open(os.path.join(root, path), "rb") as file:
                data = file.read()
            send_json("BEGIN", {"id": rid, "offset": 0, "length": len(data)})
            send("DATA", data)
            send_json("DONE", {"id": rid})
        """#

    struct Run {
        var result: CLIResult
        var events: [[String: Any]]
        func events(_ key: String) -> [[String: Any]] { events.filter { $0[key] != nil } }
    }

    /// Syncs `files` files from `ftplike://HOST/` (taking `hosts` in turn) through the helper,
    /// which accepts `password`, by `route`.
    func sync(_ route: CLIRoute, files: Int, hosts: [String] = ["127.0.0.1"], password: String = "s3cret", scheduler: String = "", assetOptions: String = "",
              environment: [String: String] = [:]) async throws -> Run {
        let helper = workspace.write(Self.helper, to: "paperboy-transport-ftplike")
        chmod(helper.path, 0o755)
        let log = workspace.path("helper.log")
        var assets = ""
        for index in 0..<files {
            let data = randomData(20_000 + index, seed: UInt64(200 + index))
            _ = workspace.write(data, to: "srv/file-\(index).bin")
            assets += """
                  [[issues.assets]]
                  url = "ftplike://\(hosts[index % hosts.count])/file-\(index).bin"
                  sha256 = "\(sha256Hex(data))"
                  \(assetOptions)

                """
        }
        let config = workspace.write("""
            [library]
            path = "lib"
            \(scheduler)
            [[transports]]
            scheme = "ftplike"
            command = ["\(helper.path)", "\(workspace.path("srv").path)", "\(log.path)", "reader", "\(password)"]
            options = { mode = "passive", region = "eu" }
            \(hosts.map { "[[credentials]]\nmatch = \"ftplike://\($0)/\"\nusername = \"reader\"\npassword_env = \"FTPLIKE_PASSWORD\"" }.joined(separator: "\n"))
            [[issues]]
            name = "2026-11-21"
            date = 2026-11-21
            \(assets)
            """, to: "paperboy.toml")
        let environment = environment.merging(["FTPLIKE_PASSWORD": "s3cret"]) { $1 }
        let cli = RoutedCLI(route, workspace: workspace, daemonEnvironment: environment)
        defer { cli.stop() }
        try await cli.start(libraryWideOf: config)
        let result = try await cli.run(["sync", "--config", config.path], in: workspace.url, environment: environment)
        let lines = ((try? String(contentsOf: log, encoding: .utf8)) ?? "").split(separator: "\n")
        let events = try lines.map { try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] ?? [:] }
        return Run(result: result, events: events)
    }

    /// Options: the `[[transports]]` entry's are defaults, the asset's win, nothing else is added
    /// (no `username`: a user name reaches the helper only in an `ANSWER`).
    @Test(arguments: CLIRoute.allCases)
    func optionsReachTheHelperAssetFirstAndANewChallengeKindIsAnswered(_ route: CLIRoute) async throws {
        let run = try await sync(route, files: 1, assetOptions: "options = { mode = \"active\" }")
        #expect(run.result.status == 0, "\(run.result.stderr)")
        let fetch = try #require(run.events("fetch").first)
        #expect(fetch["options"] as? [String: String] == ["mode": "active", "region": "eu"])
        let answers = run.events("answer")
        #expect(answers.count == 1)
        #expect(answers.first?["answer"] as? String == "use-credential")
        #expect(answers.first?["user"] as? String == "reader")
        #expect(answers.first?["has_password"] as? Bool == true)
        #expect(run.events("login").count == 1)
    }

    /// A refused credential is not offered again: the next challenge (`previous_failures` 1) is
    /// answered `default`, and the helper's message is printed once, after the URL the core names.
    @Test(arguments: CLIRoute.allCases)
    func aRefusedCredentialIsOfferedOnceAndTheMessageIsNotRepeated(_ route: CLIRoute) async throws {
        let run = try await sync(route, files: 1, password: "another")
        #expect(run.result.status == 1)
        let answers = run.events("answer").map { "\($0["previous_failures"] ?? "")=\($0["answer"] ?? "")" }
        #expect(answers == ["0=use-credential", "1=default"])
        let lines = run.result.stderr.split(separator: "\n").filter { $0.contains("login as reader refused") }
        #expect(lines.count == 1, "\(run.result.stderr)")
        let line = String(lines.first ?? "")
        #expect(line.components(separatedBy: "ftplike://127.0.0.1/file-0.bin").count == 2, "\(line)")
        #expect(!run.result.stderr.contains("s3cret"))
    }

    /// Three files at once from one host (each helper waits for the three logins), each first
    /// attempt dropped (retryable) after the login: the three helpers wait idle for the retries
    /// and serve them, so there are three logins, not four (two idle helpers kept per command:
    /// the third was stopped).
    @Test(arguments: CLIRoute.allCases)
    func helpersWaitingForRetriesKeepTheirLogins(_ route: CLIRoute) async throws {
        let run = try await sync(route, files: 3, scheduler: """
            [scheduler]
            max_per_host = 3
            retry_base_delay = "500ms"
            retry_max_delay = "500ms"
            """, environment: ["FTPLIKE_LOGINS": "3", "FTPLIKE_DROP_FIRST": "1"])
        #expect(run.result.status == 0, "\(run.result.stderr)")
        #expect(run.events("fetch").count == 6)
        #expect(run.events("login").count == 3, "\(run.events("login").count) logins for 3 files with max_per_host 3")
    }

    /// Twelve files from two hosts, two at a time per host, the first four in flight at once
    /// (each helper waits for the four logins): the helpers are kept per host, so each host costs
    /// exactly `max_per_host` logins (helpers kept per command and handed to whichever host came
    /// next logged in again and again).
    @Test(arguments: CLIRoute.allCases)
    func nFilesFromOneHostCostAtMostMaxPerHostLogins(_ route: CLIRoute) async throws {
        let run = try await sync(route, files: 12, hosts: ["127.0.0.1", "localhost"],
                                 scheduler: "[scheduler]\nmax_per_host = 2\nmax_concurrent = 8",
                                 environment: ["FTPLIKE_LOGINS": "4"])
        #expect(run.result.status == 0, "\(run.result.stderr)")
        #expect(run.events("fetch").count == 12)
        for host in ["127.0.0.1", "localhost"] {
            let logins = run.events("login").filter { $0["login"] as? String == host }.count
            #expect(logins == 2, "\(logins) logins to \(host) for 6 files with max_per_host 2")
        }
    }
}
