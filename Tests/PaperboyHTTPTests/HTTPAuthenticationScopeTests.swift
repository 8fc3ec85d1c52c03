import Foundation
import Paperboy
import PaperboyHTTP
import PaperboyTestServers
import PaperboyTesting
import Testing

/// A credential configured for a path reaches only URLs a server reads as inside that path:
/// however the URL is spelled, and wherever a redirect leads after the answer.
@Suite("HTTP authentication: credentials stay in their URL scope", .timeLimit(.minutes(2)))
struct HTTPAuthenticationScopeTests {
    static let password = "premium-pw-4c1e"
    let premium = randomData(64 * 1024 + 1, seed: 31)
    let other = randomData(32 * 1024 + 5, seed: 32)

    /// Credentials for alice, valid only under `/premium/` of `origin`.
    func premiumOnly(_ origin: String) throws -> Library.Configuration {
        var configuration = Library.Configuration.forTests(attempts: 1)
        let scope = try #require(URLScope(string: "\(origin)/premium/"))
        configuration.credentials = OriginCredentials([.init(scope: scope, credential: Credential(user: "alice", password: Self.password))])
        return configuration
    }

    /// Issue 26, case 3: nginx decodes `%2e%2e` and serves `/other/`, which takes the same
    /// password: the library must not send it there. nginx answers 200 only to a request that
    /// carried it.
    @Test func encodedDotsDoNotTakeThePremiumCredentialOutOfItsPath() async throws {
        let folder = TempFolder()
        let passwords = folder.file("htpasswd")
        try Data("alice:{PLAIN}\(Self.password)\n".utf8).write(to: passwords)
        let auth = "auth_basic \"shop\"; auth_basic_user_file \(passwords.path);"
        guard let nginx = try await startNginx(
            files: ["premium/y.bin": premium, "other/x.bin": other],
            locations: "location /premium/ { \(auth) }\n location /other/ { \(auth) }") else { return }
        defer { nginx.stop() }
        let configuration = try premiumOnly("http://127.0.0.1:\(nginx.port)")

        let inside = try await downloadThroughLibrary(nginx.url("/premium/y.bin"), in: folder, configuration: configuration)
        #expect(inside.deliveredSHA256 == sha256Hex(premium), "the premium path still gets its credential: \(inside.events)")
        #expect(nginx.accessLog.filter { $0.hasPrefix("200 ") }.count == 1, "\(nginx.accessLog)")

        let escaping = try #require(URL(string: "http://127.0.0.1:\(nginx.port)/premium/%2e%2e/other/x.bin"))
        let outside = try await downloadThroughLibrary(escaping, in: TempFolder(), configuration: configuration)
        #expect(outside.deliveredSHA256 == nil, "/other/x.bin was fetched with the premium password")
        #expect(outside.events.contains { if case .failed(_, let message) = $0 { message.contains("401") } else { false } }, "\(outside.events)")
        #expect(nginx.accessLog.filter { $0.hasPrefix("200 ") }.count == 1, "the premium password reached /other/: \(nginx.accessLog)")
        #expect(nginx.accessLog.contains { $0.hasPrefix("401 ") })
    }

    /// A server redirecting an answered request elsewhere on the same origin: the credential is
    /// not carried along; the new URL is asked anew, and only a scope covering it answers.
    func redirectingServer() throws -> FaultServer {
        let (premium, other) = (premium, other)
        return try FaultServer { request in
            guard ServerAuth.isBasic(request, user: "alice", password: Self.password) else {
                return ServerResponse(status: 401, headers: [("WWW-Authenticate", ServerAuth.basicChallenge(realm: "shop"))])
            }
            switch request.path {
            case "/premium/moved-out": return .redirect(to: "/other/x.bin")
            case "/premium/moved-in": return .redirect(to: "/premium/y.bin")
            case "/premium/y.bin": return .serving(premium, for: request)
            default: return .serving(other, for: request)
            }
        }
    }

    @Test func aRedirectAfterTheAnswerDoesNotCarryTheCredentialOutOfItsScope() async throws {
        let server = try redirectingServer()
        defer { server.stop() }
        let configuration = try premiumOnly("http://127.0.0.1:\(server.port)")
        let delegate = try await downloadThroughLibrary(server.url("/premium/moved-out"), in: TempFolder(), configuration: configuration)
        #expect(delegate.deliveredSHA256 == nil, "the redirect target was fetched with the premium password")
        let redirected = server.requests.filter { $0.path.hasPrefix("/other/") }
        #expect(!redirected.isEmpty, "the redirect was followed")
        #expect(redirected.allSatisfy { $0.header("authorization") == nil }, "the premium password was sent to /other/")
        #expect(server.requests.contains { $0.path == "/premium/moved-out" && $0.header("authorization") != nil })
    }

    @Test func aRedirectInsideTheScopeIsAnsweredFromConfigurationAgain() async throws {
        let server = try redirectingServer()
        defer { server.stop() }
        let configuration = try premiumOnly("http://127.0.0.1:\(server.port)")
        let delegate = try await downloadThroughLibrary(server.url("/premium/moved-in"), in: TempFolder(), configuration: configuration)
        #expect(delegate.deliveredSHA256 == sha256Hex(premium), "\(delegate.events)")
        #expect(!delegate.events.contains { if case .challenge = $0 { true } else { false } }, "the delegate was asked: \(delegate.events)")
        #expect(server.requests.last?.path == "/premium/y.bin")
    }
}
