import Foundation
import Paperboy
import PaperboyTestServers
import PaperboyTesting
import Testing

/// Challenges: a loopback server asks for HTTP Basic credentials, and the app's delegate (in
/// this process, whichever process runs the transfer) answers.
@Suite("Library behaviour: challenges", .timeLimit(.minutes(3)))
struct ChallengeBehaviourTests {
    static let (user, password) = ("reader", "s3cret")

    /// A server that answers 401 to a request without the right Basic credentials.
    static func basicServer(_ data: Data) throws -> FaultServer {
        try FaultServer { request in
            guard ServerAuth.isBasic(request, user: user, password: password) else {
                return ServerResponse(status: 401, headers: [("WWW-Authenticate", ServerAuth.basicChallenge(realm: "issues"))])
            }
            return .serving(data, for: request)
        }
    }

    @Test(arguments: Backends.all)
    func theDelegateAnswersACredentialChallenge(backend: any BackendFactory) async throws {
        let data = try await payload(200_000)
        let server = try Self.basicServer(data)
        defer { server.stop() }
        let home = BehaviourHome(backend)
        try await home.with { library in
            let asset = try await library.addIssue(name: "i", date: Date()).addAsset(AssetRequest(url: server.url("/private.pdf")))
            let delegate = RecordingDelegate(challengeAnswer: { challenge in
                challenge.kind == .httpBasic && challenge.realm == "issues"
                    ? .useCredential(Credential(user: Self.user, password: Self.password)) : .rejectProtectionSpace
            })
            try await asset.download(delegate: delegate)
            #expect(try await asset.waitUntilFinished() == .delivered)
            #expect(delegate.events.filter { if case .challenge = $0 { true } else { false } } == [.challenge(kind: "http-basic")])
            #expect(delegate.keptFiles == [data])
            #expect(server.requests.last.map { ServerAuth.isBasic($0, user: Self.user, password: Self.password) } == true)
        }
    }

    /// Nobody answers (default handling): the download fails with `.authentication`.
    @Test(arguments: Backends.all)
    func aChallengeNobodyAnswersFailsWithAuthentication(backend: any BackendFactory) async throws {
        let server = try Self.basicServer(Data("secret".utf8))
        defer { server.stop() }
        let home = BehaviourHome(backend)
        try await home.with { library in
            let asset = try await library.addIssue(name: "i", date: Date()).addAsset(AssetRequest(url: server.url("/private.pdf")))
            let delegate = RecordingDelegate()
            try await asset.download(delegate: delegate)
            guard case .failed(let error) = try await asset.waitUntilFinished() else {
                Testing.Issue.record("not a failure")
                return
            }
            #expect(error.reason == .authentication && error.transportCode == .authenticationFailed && !error.isRetryable, "\(error)")
            await delegate.waitForEnd()
            #expect(delegate.failures == [error])
        }
    }

    /// Wrong credentials are asked for again a bounded number of times, then fail with
    /// `.authentication`; the password never appears in the failure.
    @Test(arguments: Backends.all)
    func wrongCredentialsFailWithAuthenticationAndNoSecret(backend: any BackendFactory) async throws {
        let server = try Self.basicServer(Data("secret".utf8))
        defer { server.stop() }
        let home = BehaviourHome(backend)
        try await home.with { library in
            let asset = try await library.addIssue(name: "i", date: Date()).addAsset(AssetRequest(url: server.url("/private.pdf")))
            let delegate = RecordingDelegate(challengeAnswer: { _ in .useCredential(Credential(user: Self.user, password: "wrong-horse")) })
            try await asset.download(delegate: delegate)
            guard case .failed(let error) = try await asset.waitUntilFinished() else {
                Testing.Issue.record("not a failure")
                return
            }
            #expect(error.reason == .authentication, "\(error)")
            #expect(!error.message.contains("wrong-horse"))
            let challenges = delegate.events.filter { if case .challenge = $0 { true } else { false } }.count
            #expect((1...3).contains(challenges), "\(delegate.events)")
        }
    }
}
