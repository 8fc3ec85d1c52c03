import Foundation
import Paperboy
import PaperboyHTTP
import PaperboyTestServers
import PaperboyTesting
import Synchronization
import Testing

@Suite("HTTP authentication", .timeLimit(.minutes(2)))
struct HTTPAuthenticationTests {
    let data = randomData(256 * 1024 + 3)

    func basicServer(realm: String = "issues") throws -> FaultServer {
        let data = self.data
        return try FaultServer { request in
            guard ServerAuth.isBasic(request, user: "reader", password: "s3cret") else {
                return ServerResponse(status: 401, headers: [("WWW-Authenticate", ServerAuth.basicChallenge(realm: realm))])
            }
            return .serving(data, for: request)
        }
    }

    @Test func answersABasicChallengeThroughTheSink() async throws {
        let server = try basicServer()
        let sink = RecordingSink { _ in .useCredential(Credential(user: "reader", password: "s3cret")) }
        try await HTTPTransport().transfer(.forTests(server.url("/private")), into: sink)
        #expect(sha256Hex(sink.data) == sha256Hex(data))
        let challenge = try #require(sink.challenges.first)
        #expect(sink.challenges.count == 1)
        #expect(challenge.kind == .httpBasic)
        #expect(challenge.realm == "issues")
        #expect(challenge.previousFailureCount == 0)
        #expect(challenge.url == server.url("/private"))
        #expect(sink.beginCount == 1)
    }

    @Test func refusedCredentialsFailAfterThreeAttempts() async throws {
        let server = try basicServer()
        let sink = RecordingSink { _ in .useCredential(Credential(user: "reader", password: "wrong")) }
        let error = await transportError { try await HTTPTransport().transfer(.forTests(server.url("/private")), into: sink) }
        #expect(error?.code == .authenticationFailed)
        #expect(error?.isRetryable == false)
        #expect(error?.message.contains("HTTP 401") == true, "\(String(describing: error))")
        #expect(sink.challenges.map(\.previousFailureCount) == [0, 1, 2])
        #expect(sink.beginCount == 0)
    }

    @Test func noCredentialFailsAtOnce() async throws {
        let server = try basicServer()
        let sink = RecordingSink()
        let error = await transportError { try await HTTPTransport().transfer(.forTests(server.url("/private")), into: sink) }
        #expect(error?.code == .authenticationFailed)
        #expect(sink.challenges.count == 1)
        #expect(server.requests.count == 1)
    }

    @Test func answersADigestChallenge() async throws {
        let data = self.data
        let server = try FaultServer { request in
            guard ServerAuth.isDigest(request, user: "reader", password: "s3cret", realm: "vault", nonce: "n0nce") else {
                return ServerResponse(status: 401, headers: [("WWW-Authenticate", ServerAuth.digestChallenge(realm: "vault", nonce: "n0nce"))])
            }
            return .serving(data, for: request)
        }
        let sink = RecordingSink { _ in .useCredential(Credential(user: "reader", password: "s3cret")) }
        try await HTTPTransport().transfer(.forTests(server.url("/private")), into: sink)
        #expect(sink.challenges.map(\.kind) == [.httpDigest])
        #expect(sink.challenges.first?.realm == "vault")
        #expect(sha256Hex(sink.data) == sha256Hex(data))
        // The password itself never crossed the wire.
        #expect(server.requests.allSatisfy { !($0.header("authorization") ?? "").contains("s3cret") })
    }

    @Test func prefersDigestWhenBothAreOffered() async throws {
        let server = try FaultServer { _ in
            ServerResponse(status: 401, headers: [("WWW-Authenticate", "Basic realm=\"r\", Digest realm=\"r\", nonce=\"x\", qop=\"auth\"")])
        }
        let sink = RecordingSink()
        _ = await transportError { try await HTTPTransport().transfer(.forTests(server.url("/p")), into: sink) }
        #expect(sink.challenges.map(\.kind) == [.httpDigest])
    }

    @Test func rejectingAProtectionSpaceTriesTheNextScheme() async throws {
        let data = self.data
        let server = try FaultServer { request in
            guard ServerAuth.isBasic(request, user: "u", password: "p") else {
                return ServerResponse(status: 401, headers: [
                    ("WWW-Authenticate", "Digest realm=\"r\", nonce=\"x\", qop=\"auth\""),
                    ("WWW-Authenticate", "Basic realm=\"r\""),
                ])
            }
            return .serving(data, for: request)
        }
        let sink = RecordingSink { challenge in
            challenge.kind == .httpDigest ? .rejectProtectionSpace : .useCredential(Credential(user: "u", password: "p"))
        }
        try await HTTPTransport().transfer(.forTests(server.url("/p")), into: sink)
        #expect(sink.challenges.map(\.kind) == [.httpDigest, .httpBasic])
        #expect(sha256Hex(sink.data) == sha256Hex(data))
    }

    @Test func answersABearerChallengeWithAToken() async throws {
        let data = self.data
        let server = try FaultServer { request in
            guard ServerAuth.isBearer(request, token: "t0ken") else {
                return ServerResponse(status: 401, headers: [("WWW-Authenticate", "Bearer realm=\"api\"")])
            }
            return .serving(data, for: request)
        }
        let sink = RecordingSink { _ in .useCredential(Credential(token: "t0ken")) }
        try await HTTPTransport().transfer(.forTests(server.url("/api")), into: sink)
        #expect(sink.challenges.map(\.kind) == [.httpBearer])
        #expect(sha256Hex(sink.data) == sha256Hex(data))
    }

    @Test func credentialsAreNotForwardedToAnotherHost() async throws {
        let data = self.data
        let server = try FaultServer { request in
            if request.host.hasPrefix("localhost") { return .serving(data, for: request) }
            guard ServerAuth.isBasic(request, user: "reader", password: "s3cret") else {
                return ServerResponse(status: 401, headers: [("WWW-Authenticate", ServerAuth.basicChallenge(realm: "r"))])
            }
            return .redirect(to: "http://localhost:\(request.host.split(separator: ":").last ?? "")/elsewhere")
        }
        let sink = RecordingSink { _ in .useCredential(Credential(user: "reader", password: "s3cret")) }
        try await HTTPTransport().transfer(.forTests(server.url("/private")), into: sink)
        #expect(sha256Hex(sink.data) == sha256Hex(data))
        let forwarded = server.requests.filter { $0.host.hasPrefix("localhost") }
        #expect(forwarded.count == 1)
        #expect(forwarded.allSatisfy { $0.header("authorization") == nil })
        #expect(server.requests.contains { $0.header("authorization") != nil && $0.host.hasPrefix("127.0.0.1") })
    }

    @Test func theLibraryAnswersFromConfiguredCredentialsBeforeTheDelegate() async throws {
        let server = try basicServer()
        var configuration = Library.Configuration.forTests(attempts: 1)
        configuration.credentials = OriginCredentials([
            .init(scope: URLScope(string: "http://127.0.0.1:\(server.port)/")!, credential: Credential(user: "reader", password: "s3cret")),
        ])
        let folder = TempFolder()
        let delegate = try await downloadThroughLibrary(server.url("/private"), in: folder, configuration: configuration)
        #expect(delegate.deliveredSHA256 == sha256Hex(data))
        #expect(!delegate.events.contains { if case .challenge = $0 { true } else { false } })
    }

    @Test func theLibraryAsksTheDelegateWhenConfiguredCredentialsAreRefused() async throws {
        let server = try basicServer()
        var configuration = Library.Configuration.forTests(attempts: 1)
        configuration.credentials = OriginCredentials([
            .init(scope: URLScope(string: "http://127.0.0.1:\(server.port)/")!, credential: Credential(user: "reader", password: "stale")),
        ])
        let folder = TempFolder()
        let delegate = RecordingDelegate { challenge in
            challenge.previousFailureCount == 1 ? .useCredential(Credential(user: "reader", password: "s3cret")) : .cancelAuthenticationChallenge
        }
        _ = try await downloadThroughLibrary(server.url("/private"), in: folder, configuration: configuration, delegate: delegate)
        #expect(delegate.deliveredSHA256 == sha256Hex(data))
        #expect(delegate.events.filter { $0 == .challenge(kind: "http-basic") }.count == 1)
    }

    @Test func aProxysChallengeSaysItIsAProxyAndNamesTheProxy() async throws {
        let data = self.data
        let proxyAuthorization = "Basic " + Data("bob:proxy-pw".utf8).base64EncodedString()
        let proxy = try FaultServer { request in
            guard request.header("proxy-authorization") == proxyAuthorization else {
                return ServerResponse(status: 407, headers: [("Proxy-Authenticate", "Basic realm=\"gateway\"")])
            }
            return .serving(data, for: request)
        }
        let transport = HTTPTransport(configuration: .init(proxy: "http://127.0.0.1:\(proxy.port)"))
        let sink = RecordingSink { challenge in
            challenge.isProxy ? .useCredential(Credential(user: "bob", password: "proxy-pw")) : .cancelAuthenticationChallenge
        }
        let origin = try #require(URL(string: "http://magazine.invalid/private"))
        try await transport.transfer(.forTests(origin), into: sink)
        #expect(sha256Hex(sink.data) == sha256Hex(data))
        let challenge = try #require(sink.challenges.first)
        #expect(sink.challenges.count == 1)
        #expect(challenge.isProxy)
        #expect(challenge.proxyURL == URL(string: "http://127.0.0.1:\(proxy.port)"))
        #expect(challenge.url == origin)
        #expect(challenge.realm == "gateway")
        #expect(proxy.requests.last?.path == origin.absoluteString)
        #expect(proxy.requests.allSatisfy { $0.header("authorization") == nil })
    }
}
