import Foundation
import PaperboyTestServers
import PaperboyTesting
import Testing

/// `[[credentials]]` reach only their own origin, a proxy's challenge never gets the origin's
/// password, and no password in a URL reaches the library's database: in process and through a
/// daemon (issue 27), whose `[[credentials]]` and environment (secrets, proxy variables) are the
/// ones used for assets (docs/Daemon.md: credentials are library-wide), the same as the command's here.
@Suite("credentials bound to origins (paperboy sync, add)", .timeLimit(.minutes(3)))
struct CredentialBindingTests {
    let workspace = Workspace()
    let content = randomData(40_000, seed: 15)
    static let originPassword = "origin-pw-7f3a"
    static let proxyPassword = "proxy-pw-91c2"

    /// `Basic` for `user`:`password`, as it travels in a header.
    static func basic(_ user: String, _ password: String) -> String {
        "Basic " + Data("\(user):\(password)".utf8).base64EncodedString()
    }

    /// Serves `content` to requests with alice's Basic credentials, 401 otherwise.
    func serveOrigin(_ request: ServerRequest) -> ServerResponse {
        guard ServerAuth.isBasic(request, user: "alice", password: Self.originPassword) else {
            return ServerResponse(status: 401, headers: [("WWW-Authenticate", ServerAuth.basicChallenge(realm: "magazine"))])
        }
        return .serving(content, for: request)
    }

    /// Two servers that look alike as text: the origin on a four-digit port P, the look-alike on
    /// P followed by one more digit, so that `http://127.0.0.1:P` is a prefix of its URLs.
    func lookAlikePair() throws -> (origin: FaultServer, lookAlike: FaultServer) {
        for _ in 0..<100 {
            let port = Int.random(in: 3300...6500)
            guard let origin = try? FaultServer(port: port, handler: { [self] in serveOrigin($0) }) else { continue }
            if let lookAlike = try? FaultServer(port: port * 10 + Int.random(in: 0...9), handler: { [self] in serveOrigin($0) }) {
                return (origin, lookAlike)
            }
            origin.stop()
        }
        throw ServerError("no free pair of ports P and P·10+d")
    }

    func config(assets: [(url: String, path: String)], credentials: [(match: String, user: String, passwordVariable: String)]) -> URL {
        var text = "[library]\npath = \"lib\"\n\n[[issues]]\nname = \"weekly\"\ndate = 2026-11-21\n"
        for asset in assets { text += "  [[issues.assets]]\n  url = \"\(asset.url)\"\n  path = \"\(asset.path)\"\n" }
        for entry in credentials {
            text += "[[credentials]]\nmatch = \"\(entry.match)\"\nusername = \"\(entry.user)\"\npassword_env = \"\(entry.passwordVariable)\"\n"
        }
        return workspace.write(text, to: "paperboy.toml")
    }

    var secrets: [String: String] { ["PB_ORIGIN_PW": Self.originPassword, "PB_PROXY_PW": Self.proxyPassword] }

    /// Runs `sync` on `file` by `route` with `environment`, the daemon's too (started on the
    /// file's library-wide settings, its `[[credentials]]` among them).
    func sync(_ route: CLIRoute, _ file: URL, environment: [String: String] = [:]) async throws -> CLIResult {
        let cli = RoutedCLI(route, workspace: workspace, daemonEnvironment: environment)
        defer { cli.stop() }
        try await cli.start(libraryWideOf: file)
        return try await cli.run(["sync", "--config", file.path], environment: environment)
    }

    func delivered(_ path: String) -> Data? { try? Data(contentsOf: workspace.path("lib/Issues/weekly/\(path)")) }

    @Test(arguments: CLIRoute.allCases)
    func aMatchWithoutTrailingSlashDoesNotReachALookAlikePort(_ route: CLIRoute) async throws {
        let (origin, lookAlike) = try lookAlikePair()
        defer { origin.stop(); lookAlike.stop() }
        let file = config(
            assets: [("\(origin.url("/a.pdf"))", "a.pdf"), ("\(lookAlike.url("/b.pdf"))", "b.pdf")],
            credentials: [("http://127.0.0.1:\(origin.port)", "alice", "PB_ORIGIN_PW")])
        let result = try await sync(route, file, environment: secrets)

        #expect(delivered("a.pdf") == content, "the right origin still gets its credentials: \(result.stderr)")
        #expect(origin.requests.contains { $0.header("authorization") == Self.basic("alice", Self.originPassword) })
        #expect(!lookAlike.requests.isEmpty)
        #expect(lookAlike.requests.allSatisfy { $0.header("authorization") == nil },
                "credentials for port \(origin.port) were sent to port \(lookAlike.port)")
        #expect(delivered("b.pdf") == nil)
        #expect(result.status == 1)
        #expect(result.stderr.contains("b.pdf"), "\(result.stderr)")
        #expect(!result.stderr.contains(Self.originPassword) && !result.stdout.contains(Self.originPassword))
    }

    @Test(arguments: CLIRoute.allCases)
    func anotherHostNameForTheSameServerGetsNoCredentials(_ route: CLIRoute) async throws {
        let server = try FaultServer { [self] in serveOrigin($0) }
        defer { server.stop() }
        let file = config(
            assets: [("\(server.url("/a.pdf", host: "localhost"))", "a.pdf")],
            credentials: [("http://127.0.0.1:\(server.port)/", "alice", "PB_ORIGIN_PW")])
        let result = try await sync(route, file, environment: secrets)
        #expect(result.status == 1)
        #expect(server.requests.allSatisfy { $0.header("authorization") == nil })
    }

    // MARK: Paths

    /// Issue 26, case 3: a catalog asset `premium/%2e%2e/other/x.bin`, which nginx decodes and
    /// serves from `/other/`, is not sent the password of a `[[credentials]]` entry for
    /// `/premium/`. nginx answers 200 only to requests carrying it.
    @Test(arguments: CLIRoute.allCases)
    func encodedDotsInACatalogURLDoNotLeaveTheCredentialsPath(_ route: CLIRoute) async throws {
        let binary = try #require(NginxServer.binary, "nginx is needed (CI=true)")
        let passwords = workspace.write("alice:{PLAIN}\(Self.originPassword)\n", to: "htpasswd")
        let auth = "auth_basic \"shop\"; auth_basic_user_file \(passwords.path);"
        let nginx = try await offThePool {
            try NginxServer(binary: binary, locations: "location /premium/ { \(auth) }\n location /other/ { \(auth) }")
        }
        defer { nginx.stop() }
        for (folder, data) in [("premium", content), ("other", randomData(20_000, seed: 16))] {
            let file = nginx.documentRoot.appendingPathComponent("\(folder)/\(folder == "premium" ? "y" : "x").bin")
            try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
            try data.write(to: file)
        }
        let origin = "http://127.0.0.1:\(nginx.port)"
        _ = workspace.write("""
            {"issues": [{"name": "weekly", "date": "2026-11-21", "assets": [
              {"url": "\(origin)/premium/y.bin", "path": "y.bin"},
              {"url": "\(origin)/premium/%2e%2e/other/x.bin", "path": "x.bin"}]}]}
            """, to: "publisher/catalog.json")
        let file = workspace.write("""
            [library]
            path = "lib"
            [[feeds]]
            name = "weekly"
            url = "publisher/catalog.json"
            [[credentials]]
            match = "\(origin)/premium/"
            username = "alice"
            password_env = "PB_ORIGIN_PW"
            """, to: "paperboy.toml")
        let result = try await sync(route, file, environment: secrets)

        #expect(delivered("y.bin") == content, "the premium path still gets its credentials: \(result.stderr)")
        #expect(delivered("x.bin") == nil, "/other/x.bin was fetched with the premium password")
        #expect(nginx.accessLog.filter { $0.hasPrefix("200 ") }.count == 1, "the premium password reached /other/: \(nginx.accessLog)")
        #expect(result.status == 1)
        #expect(result.stderr.contains("x.bin"), "\(result.stderr)")
        #expect(!result.stderr.contains(Self.originPassword) && !result.stdout.contains(Self.originPassword))
    }

    // MARK: Proxies

    /// A forward proxy that wants bob's Basic credentials (407 otherwise), then acts as the
    /// origin behind it (alice's credentials, 401 otherwise).
    func startProxy() throws -> FaultServer {
        try FaultServer { [self] request in
            guard request.header("proxy-authorization") == Self.basic("bob", Self.proxyPassword) else {
                return ServerResponse(status: 407, headers: [("Proxy-Authenticate", "Basic realm=\"proxy\"")])
            }
            return serveOrigin(request)
        }
    }

    /// Sync through the proxy, with proxy variables set for the child only.
    func syncThroughProxy(_ route: CLIRoute, _ proxy: String, credentials: [(match: String, user: String, passwordVariable: String)]) async throws
        -> CLIResult {
        // The origin's name never resolves: only the proxy can reach it.
        let file = config(assets: [("http://magazine.invalid/issue.pdf", "issue.pdf")], credentials: credentials)
        var environment = secrets
        environment.merge(["http_proxy": proxy, "no_proxy": "", "NO_PROXY": "", "all_proxy": "", "ALL_PROXY": ""]) { $1 }
        return try await sync(route, file, environment: environment)
    }

    func expectNoCrossedSecrets(_ proxy: FaultServer) {
        for request in proxy.requests {
            #expect(request.header("proxy-authorization") != Self.basic("alice", Self.originPassword),
                    "the origin's password was sent to the proxy")
            #expect(request.header("authorization") != Self.basic("bob", Self.proxyPassword),
                    "the proxy's password was sent to the origin")
        }
    }

    @Test(arguments: CLIRoute.allCases)
    func theOriginsCredentialsNeverAnswerAProxyChallenge(_ route: CLIRoute) async throws {
        let proxy = try startProxy()
        defer { proxy.stop() }
        let result = try await syncThroughProxy(route, 
            "http://127.0.0.1:\(proxy.port)", credentials: [("http://magazine.invalid", "alice", "PB_ORIGIN_PW")])
        #expect(!proxy.requests.isEmpty, "the request went through the proxy")
        expectNoCrossedSecrets(proxy)
        #expect(result.status == 1)
        #expect(result.stderr.contains("407"), "\(result.stderr)")
        #expect(!result.stderr.contains(Self.originPassword))
    }

    @Test(arguments: CLIRoute.allCases)
    func aProxyIsAnsweredByTheCredentialsMatchingItsOwnURL(_ route: CLIRoute) async throws {
        let proxy = try startProxy()
        defer { proxy.stop() }
        let result = try await syncThroughProxy(route, "http://127.0.0.1:\(proxy.port)", credentials: [
            ("http://magazine.invalid", "alice", "PB_ORIGIN_PW"),
            ("http://127.0.0.1:\(proxy.port)", "bob", "PB_PROXY_PW"),
        ])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(delivered("issue.pdf") == content)
        expectNoCrossedSecrets(proxy)
        let last = try #require(proxy.requests.last)
        #expect(last.path == "http://magazine.invalid/issue.pdf")
        #expect(last.header("proxy-authorization") == Self.basic("bob", Self.proxyPassword))
        #expect(last.header("authorization") == Self.basic("alice", Self.originPassword))
    }

    @Test(arguments: CLIRoute.allCases)
    func theUserAndPasswordOfHTTPProxyStillReachTheProxy(_ route: CLIRoute) async throws {
        let proxy = try startProxy()
        defer { proxy.stop() }
        let result = try await syncThroughProxy(route, 
            "http://bob:\(Self.proxyPassword)@127.0.0.1:\(proxy.port)", credentials: [("http://magazine.invalid", "alice", "PB_ORIGIN_PW")])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(delivered("issue.pdf") == content)
        expectNoCrossedSecrets(proxy)
        #expect(!result.stderr.contains(Self.proxyPassword) && !result.stdout.contains(Self.proxyPassword))
    }

    // MARK: Passwords in URLs

    /// Every byte of every file under the library (the database, its journal and WAL included).
    func libraryBytes() throws -> Data {
        var all = Data()
        let walker = FileManager.default.enumerator(at: workspace.path("lib"), includingPropertiesForKeys: nil)
        while let file = walker?.nextObject() as? URL {
            if let data = try? Data(contentsOf: file) { all.append(data) }
        }
        return all
    }

    @Test(arguments: CLIRoute.allCases)
    func paperboyAddRefusesAPasswordInTheURL(_ route: CLIRoute) async throws {
        let file = workspace.write("[library]\npath = \"lib\"\n", to: "paperboy.toml")
        let url = "http://alice:\(Self.originPassword)@127.0.0.1:9/a.pdf"
        let cli = RoutedCLI(route, workspace: workspace)
        defer { cli.stop() }
        let result = try await cli.run(["add", url, "--issue", "weekly", "--config", file.path])
        #expect(result.status != 0)
        #expect(result.stderr.contains("password"), "\(result.stderr)")
        #expect(!result.stderr.contains(Self.originPassword), "\(result.stderr)")
        #expect(try libraryBytes().range(of: Data(Self.originPassword.utf8)) == nil)
    }

    @Test(arguments: CLIRoute.allCases)
    func aCatalogAssetWithAPasswordIsNotStored(_ route: CLIRoute) async throws {
        _ = workspace.write("""
            {"issues": [{"name": "weekly", "date": "2026-11-21",
              "assets": [{"url": "http://alice:\(Self.originPassword)@127.0.0.1:9/a.pdf", "path": "a.pdf"}]}]}
            """, to: "publisher/catalog.json")
        let file = workspace.write("""
            [library]
            path = "lib"
            [[feeds]]
            name = "weekly"
            url = "publisher/catalog.json"
            """, to: "paperboy.toml")
        let result = try await sync(route, file)
        #expect(result.status != 0)
        #expect(result.stderr.contains("holds a password"), "\(result.stderr)")
        #expect(!result.stderr.contains(Self.originPassword), "\(result.stderr)")
        #expect(try libraryBytes().range(of: Data(Self.originPassword.utf8)) == nil)
    }
}
