import Foundation
import PaperboyTestServers
import Testing

/// `paperboy conformance`: the transport suite from the command line, as a helper author in any
/// language runs it.
@Suite("paperboy conformance", .timeLimit(.minutes(3)))
struct ConformanceCommandTests {
    let workspace = Workspace()

    /// The Python example helper, whose test hooks (`?drop-after=`, `?ignore-range=1`) give the
    /// dropping and range-ignoring URLs, and whose `.paperboy-auth` files protect a folder, and
    /// which fetches ranges: every check runs but `segments` (helpers never split).
    @Test func thePythonExampleHelperPassesEveryCheck() async throws {
        let root = workspace.path("srv")
        try FileManager.default.createDirectory(at: root.appendingPathComponent("pub"), withIntermediateDirectories: true)
        _ = workspace.write("reader:s3cret\n", to: "srv/locked/.paperboy-auth")
        let result = try await CLI.run([
            "conformance",
            "--served-folder", root.appendingPathComponent("pub").path, "--base-url", "tree://pub/",
            "--protected-folder", root.appendingPathComponent("locked").path, "--protected-base-url", "tree://locked/",
            "--user", "reader", "--password-env", "CONFORMANCE_PASSWORD",
            "--dropping-url", "{url}?drop-after={bytes}", "--ignoring-ranges-url", "{url}?ignore-range=1", "--ranges",
            "--command", ExecTransportSyncTests.treeHelper, "--root", root.path,
        ], environment: ["PAPERBOY_TREE_TEST_HOOKS": "1", "CONFORMANCE_PASSWORD": "s3cret"])
        #expect(result.status == 0, "\(result.stdout)\n\(result.stderr)")
        #expect(result.stdout.contains("11 passed, 0 failed, 1 skipped"), "\(result.stdout)")
        for check in ["full-download", "resume", "challenges", "authentication-refused", "dropped-connection", "ignored-range-restarts", "ranges"] {
            #expect(result.stdout.contains("  pass  \(check)\n"), "\(check): \(result.stdout)")
        }
        // The suite cleans up after itself: only the author's own file is left.
        #expect(try FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent("pub").path).isEmpty)
        #expect(try FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent("locked").path) == [".paperboy-auth"])
    }

    /// The shipped File transport through the same command (no `--command`): the checks its
    /// fixture cannot support are skipped, each saying which option would enable it.
    @Test func theFileTransportPassesThroughTheSameCommand() async throws {
        let served = workspace.path("files")
        try FileManager.default.createDirectory(at: served, withIntermediateDirectories: true)
        let result = try await CLI.run(["conformance", "--served-folder", served.path, "--base-url", served.absoluteString])
        #expect(result.status == 0, "\(result.stdout)\n\(result.stderr)")
        #expect(result.stdout.contains("7 passed, 0 failed, 5 skipped"), "\(result.stdout)")
        #expect(result.stdout.contains("  skip  dropped-connection: "), "\(result.stdout)")
        #expect(result.stdout.contains("(give --dropping-url)"), "\(result.stdout)")
    }

    /// A helper that claims to resume but sends from byte 0, and reports a missing file as a
    /// retryable I/O error: the command names both breaches and exits 1.
    @Test func aBrokenHelperFailsWithTheReason() async throws {
        let helper = workspace.write(Self.brokenHelper, to: "paperboy-transport-broken")
        chmod(helper.path, 0o755)
        let served = workspace.path("pub")
        try FileManager.default.createDirectory(at: served, withIntermediateDirectories: true)
        let result = try await CLI.run([
            "conformance", "--served-folder", served.path, "--base-url", "broken://pub/",
            "--check", "full-download", "--check", "resume", "--check", "not-found",
            "--command", helper.path, workspace.url.path,
        ])
        #expect(result.status == 1, "\(result.stdout)\n\(result.stderr)")
        #expect(result.stdout.contains("  pass  full-download\n"), "\(result.stdout)")
        #expect(result.stdout.contains("  FAIL  resume: the bytes after offset 500002 differ from the published ones"), "\(result.stdout)")
        #expect(result.stdout.contains("  FAIL  not-found: a missing resource failed with code io-error"), "\(result.stdout)")
        #expect(result.stdout.contains("1 passed, 2 failed, 0 skipped"), "\(result.stdout)")
    }

    /// Issue 26, case 4: the challenge checks against the shipped HTTP transport and nginx. A
    /// protected base URL that nginx protects itself passes; one that redirects to another
    /// origin (another port) fails, and that origin never receives the password: it answers
    /// 200 only to a request carrying it.
    @Test func theTestPasswordGoesOnlyToTheProtectedBaseURL() async throws {
        let binary = try #require(NginxServer.binary, "nginx is needed (CI=true)")
        let password = "conformance-pw-5d2b"
        let passwords = workspace.write("reader:{PLAIN}\(password)\n", to: "htpasswd")
        let auth = "auth_basic \"locked\"; auth_basic_user_file \(passwords.path);"
        let elsewhere = try await offThePool { try NginxServer(binary: binary, locations: "location /locked/ { \(auth) }") }
        defer { elsewhere.stop() }
        let server = try await offThePool {
            try NginxServer(binary: binary, locations: """
                location /locked/ { \(auth) }
                location /moved/ { rewrite ^/moved/(.*)$ http://127.0.0.1:\(elsewhere.port)/locked/$1 redirect; }
                """)
        }
        defer { server.stop() }
        for folder in [server.documentRoot.appendingPathComponent("pub"), server.documentRoot.appendingPathComponent("locked"),
                       elsewhere.documentRoot.appendingPathComponent("locked")] {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        }
        func conformance(protectedFolder: URL, protectedBaseURL: URL) async throws -> CLIResult {
            try await CLI.run([
                "conformance", "--check", "challenges",
                "--served-folder", server.documentRoot.appendingPathComponent("pub").path, "--base-url", server.url("/pub/").absoluteString,
                "--protected-folder", protectedFolder.path, "--protected-base-url", protectedBaseURL.absoluteString,
                "--user", "reader", "--password-env", "CONFORMANCE_PASSWORD",
            ], environment: ["CONFORMANCE_PASSWORD": password])
        }

        let direct = try await conformance(protectedFolder: server.documentRoot.appendingPathComponent("locked"), protectedBaseURL: server.url("/locked/"))
        #expect(direct.status == 0, "\(direct.stdout)\n\(direct.stderr)")
        #expect(direct.stdout.contains("  pass  challenges\n"), "\(direct.stdout)")

        let moved = try await conformance(protectedFolder: elsewhere.documentRoot.appendingPathComponent("locked"), protectedBaseURL: server.url("/moved/"))
        #expect(moved.status == 1, "\(moved.stdout)\n\(moved.stderr)")
        #expect(moved.stdout.contains("  FAIL  challenges: "), "\(moved.stdout)")
        #expect(moved.stdout.contains("127.0.0.1:\(elsewhere.port)/locked/"), "the failure names where the challenge came from: \(moved.stdout)")
        #expect(!elsewhere.accessLog.isEmpty, "the redirect was followed")
        #expect(!elsewhere.accessLog.contains { $0.hasPrefix("200 ") }, "the password reached the other origin: \(elsewhere.accessLog)")
        #expect(!moved.stdout.contains(password) && !moved.stderr.contains(password))
    }

    @Test func aFolderThatIsNotThereIsAUsageError() async throws {
        let result = try await CLI.run(["conformance", "--served-folder", workspace.path("nope").path, "--base-url", "tree://pub/"])
        #expect(result.status == 2)
        #expect(result.stderr.contains("--served-folder \(workspace.path("nope").path) is not a folder"), "\(result.stderr)")
    }

    /// The guide's smallest helper with two bugs: `BEGIN` echoes the asked offset but the bytes
    /// start at 0, and a missing file is a retryable `io-error`.
    static let brokenHelper = #"""
        #!/usr/bin/env python3
        import json, os, sys
        inp, out = sys.stdin.buffer, sys.stdout.buffer
        root = sys.argv[1]
        \#(pythonFraming)
        read_frame()
        send_json("HELLO", {"protocol": 1, "name": "broken", "schemes": ["broken"]})
        while True:
            _, request = read_frame()
            rid, url = request["id"], request["url"]
            path = os.path.join(root, url.split("://", 1)[1])
            if not os.path.isfile(path):
                send_json("ERROR", {"id": rid, "code": "io-error", "message": "no such file", "retryable": True})
                continue
            with open(path, "rb") as file:
                size = os.fstat(file.fileno()).st_size
                send_json("BEGIN", {"id": rid, "offset": request["offset"], "length": size})
                remaining = size - request["offset"]
                while remaining > 0 and (chunk := file.read(min(65536, remaining))):
                    send("DATA", chunk)
                    remaining -= len(chunk)
            send_json("DONE", {"id": rid})
        """#
}
