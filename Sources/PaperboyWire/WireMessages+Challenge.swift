import Foundation
import Paperboy

// `CHALLENGE` (daemon → the client that claimed an asset) and `ANSWER` (client → daemon); see
// docs/Daemon.md, "Authentication challenges".

extension DaemonProtocol.Kind {
    /// Daemon → client: a transfer of an asset the client claimed needs credentials or a trust
    /// decision that the configuration did not give.
    public static let challenge = "CHALLENGE"
    /// Client → daemon: the answer to a `CHALLENGE`.
    public static let answer = "ANSWER"
}

extension DaemonProtocol.ErrorCode {
    /// `ANSWER` naming a challenge that is not waiting for this connection's answer (answered,
    /// timed out, or asked of another connection).
    public static let unknownChallenge = "unknown-challenge"
}

/// `CHALLENGE`: everything ``AuthChallenge`` says, which is never a secret (the URL is redacted).
package struct ChallengeMessage: Codable, Sendable {
    /// Names this challenge in the `ANSWER`.
    package var challenge: String
    package var asset: String
    package var issue: String?
    /// ``AuthChallenge/Kind`` (`http-basic`, `ssh-password`, `server-trust`…).
    package var kind: String
    package var url: URL
    package var realm: String?
    package var previousFailureCount: Int
    package var isProxy: Bool
    package var proxyURL: URL?
    package var serverTrust: WireServerTrust?
    package var prompts: [String]?

    /// `proxyUrl`: what `convertFromSnakeCase` makes of `proxy_url` (a `proxyURL` key never matched it).
    private enum CodingKeys: String, CodingKey {
        case challenge, asset, issue, kind, url, realm, previousFailureCount, isProxy, serverTrust, prompts
        case proxyURL = "proxyUrl"
    }

    package init(id: String, asset: String, issue: String?, _ challenge: AuthChallenge) {
        self.challenge = id
        self.asset = asset
        self.issue = issue
        kind = challenge.kind.rawValue
        url = challenge.url.redacted
        // A server chooses the realm and the prompts: bounded, so that a frame stays far below
        // the protocol's limit (a frame over it would end the client's connection).
        realm = challenge.realm.map { Self.bounded($0) }
        previousFailureCount = challenge.previousFailureCount
        isProxy = challenge.isProxy
        proxyURL = challenge.proxyURL?.redacted
        serverTrust = challenge.serverTrust.map(WireServerTrust.init)
        prompts = challenge.prompts.isEmpty ? nil : challenge.prompts.prefix(Self.maxPrompts).map { Self.bounded($0) }
    }

    /// The most keyboard-interactive prompts sent, and the longest realm or prompt (in characters).
    package static let maxPrompts = 16
    package static let maxText = 1024

    private static func bounded(_ text: String) -> String {
        text.count > maxText ? String(text.prefix(maxText)) + "…" : text
    }

    /// The challenge as the client's delegate sees it (numbers from the wire clamped).
    package var authChallenge: AuthChallenge {
        AuthChallenge(
            kind: AuthChallenge.Kind(kind), url: url, realm: realm, previousFailureCount: max(0, previousFailureCount),
            serverTrust: serverTrust?.serverTrust, prompts: prompts ?? [], isProxy: isProxy, proxyURL: proxyURL)
    }
}

/// ``ServerTrust`` on the wire.
package struct WireServerTrust: Codable, Sendable {
    package var host: String
    package var keyType: String
    package var fingerprint: String
    /// `unknownHost`, `changedKey`, `untrustedCertificate`.
    package var reason: String

    package init(_ trust: ServerTrust) {
        host = trust.host
        keyType = trust.keyType
        fingerprint = trust.fingerprint
        reason = trust.reason.rawValue
    }

    /// An unknown reason reads as `changedKey`, the one that asks for the most care.
    package var serverTrust: ServerTrust {
        ServerTrust(host: host, keyType: keyType, fingerprint: fingerprint, reason: ServerTrust.Reason(rawValue: reason) ?? .changedKey)
    }
}

/// `ANSWER`: a disposition, and for `use-credential` the credential.
package struct AnswerRequest: Codable, Sendable {
    package var id: Int64
    package var challenge: String
    /// `use-credential`, `default`, `cancel`, `reject-protection-space`.
    package var disposition: String
    package var credential: WireCredential?

    package init(id: Int64, challenge: String, _ disposition: AuthChallengeDisposition) {
        self.id = id
        self.challenge = challenge
        switch disposition {
        case .useCredential(let credential):
            self.disposition = "use-credential"
            self.credential = WireCredential(credential)
        case .performDefaultHandling: self.disposition = "default"
        case .cancelAuthenticationChallenge: self.disposition = "cancel"
        case .rejectProtectionSpace: self.disposition = "reject-protection-space"
        }
    }

    /// The disposition this carries.
    ///
    /// - Throws: `bad-request` for an unknown disposition or `use-credential` without a credential.
    package func authDisposition() throws(WireError) -> AuthChallengeDisposition {
        switch disposition {
        case "use-credential":
            guard let credential else {
                throw WireError(DaemonProtocol.ErrorCode.badRequest, "ANSWER: 'use-credential' without a 'credential'")
            }
            return .useCredential(credential.credential)
        case "default": return .performDefaultHandling
        case "cancel": return .cancelAuthenticationChallenge
        case "reject-protection-space": return .rejectProtectionSpace
        default:
            throw WireError(DaemonProtocol.ErrorCode.badRequest, "ANSWER: unknown disposition (use-credential, default, cancel, reject-protection-space)")
        }
    }
}

/// ``Credential`` on the wire, client → daemon only: the daemon never sends one.
package struct WireCredential: Codable, Sendable {
    package var user: String?
    package var password: String?
    package var token: String?
    package var privateKeyPath: String?
    package var passphrase: String?
    package var trustsServer: Bool?
    package var responses: [String]?

    package init(_ credential: Credential) {
        user = credential.user
        password = credential.password
        token = credential.token
        privateKeyPath = credential.privateKey?.path
        passphrase = credential.passphrase
        trustsServer = credential.trustsServer ? true : nil
        responses = credential.responses.isEmpty ? nil : credential.responses
    }

    package var credential: Credential {
        Credential(
            user: user, password: password, token: token, privateKey: privateKeyPath.map { URL(fileURLWithPath: $0) },
            passphrase: passphrase, trustsServer: trustsServer ?? false, responses: responses ?? [])
    }
}
