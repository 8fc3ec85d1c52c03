import Foundation

/// A request for credentials or a trust decision, raised by a transport.
public struct AuthChallenge: Sendable, Hashable, CustomStringConvertible {
    /// What kind of answer the transport needs. New kinds may be added: switch with a default.
    public struct Kind: Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(_ rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// HTTP Basic (401 or 407).
        public static let httpBasic = Kind("http-basic")
        /// HTTP Digest (401 or 407).
        public static let httpDigest = Kind("http-digest")
        /// A bearer token.
        public static let httpBearer = Kind("http-bearer")
        /// SSH password authentication.
        public static let sshPassword = Kind("ssh-password")
        /// SSH public key authentication (a key file, or its passphrase).
        public static let sshPublicKey = Kind("ssh-publickey")
        /// SSH keyboard-interactive authentication; see ``AuthChallenge/prompts``.
        public static let sshKeyboardInteractive = Kind("ssh-keyboard-interactive")
        /// Trust a server: an unknown or changed host key, an untrusted certificate.
        public static let serverTrust = Kind("server-trust")
    }

    /// The kind of answer needed.
    public var kind: Kind
    /// The URL being fetched (never with credentials in it).
    public var url: URL
    /// The realm or protection space the server named, if any.
    public var realm: String?
    /// How many answers to this challenge were already refused; stop answering when it grows.
    public var previousFailureCount: Int
    /// The server's identity for ``Kind/serverTrust`` challenges.
    public var serverTrust: ServerTrust?
    /// Prompts for ``Kind/sshKeyboardInteractive``.
    public var prompts: [String]
    /// Whether a proxy asks (HTTP 407), not the server of ``url``. Credentials for the origin
    /// must never answer a proxy: the proxy would read them.
    public var isProxy: Bool
    /// For a proxy's challenge: the proxy's URL (never with credentials in it), if known.
    public var proxyURL: URL?

    /// Creates a challenge.
    public init(
        kind: Kind, url: URL, realm: String? = nil, previousFailureCount: Int = 0,
        serverTrust: ServerTrust? = nil, prompts: [String] = [], isProxy: Bool = false, proxyURL: URL? = nil
    ) {
        self.kind = kind
        self.url = url
        self.realm = realm
        self.previousFailureCount = previousFailureCount
        self.serverTrust = serverTrust
        self.prompts = prompts
        self.isProxy = isProxy || proxyURL != nil
        self.proxyURL = proxyURL?.redacted
    }

    public var description: String {
        var text = "\(kind) challenge for \(url.redactedString)"
        if isProxy { text += " from proxy \(proxyURL?.redactedString ?? "(unknown)")" }
        if let realm { text += " (realm \(realm))" }
        if previousFailureCount > 0 { text += ", \(previousFailureCount) refused before" }
        if let serverTrust { text += ", \(serverTrust)" }
        return text
    }
}

/// What a server presented about its identity.
public struct ServerTrust: Sendable, Hashable, CustomStringConvertible {
    /// Why the server is not trusted yet.
    public enum Reason: String, Sendable, Hashable {
        /// No key is recorded for this host.
        case unknownHost
        /// The recorded key differs from the presented one (possible man-in-the-middle).
        case changedKey
        /// The certificate chain does not verify.
        case untrustedCertificate
    }

    /// Host and port presented, such as `files.example.com:22`.
    public var host: String
    /// The key or certificate type, such as `ssh-ed25519`.
    public var keyType: String
    /// The fingerprint as OpenSSH prints it, such as `SHA256:…`.
    public var fingerprint: String
    /// Why a decision is needed.
    public var reason: Reason

    /// Creates a description of a server identity.
    public init(host: String, keyType: String, fingerprint: String, reason: Reason) {
        self.host = host
        self.keyType = keyType
        self.fingerprint = fingerprint
        self.reason = reason
    }

    public var description: String { "\(reason.rawValue) \(host) \(keyType) \(fingerprint)" }
}

/// The answer to an ``AuthChallenge``.
public enum AuthChallengeDisposition: Sendable, Equatable {
    /// Use this credential.
    case useCredential(Credential)
    /// Let the transport do its default (usually: fail, and refuse untrusted servers).
    case performDefaultHandling
    /// Stop the transfer; it fails with an authentication error.
    case cancelAuthenticationChallenge
    /// Decline this protection space; the transport may try another method.
    case rejectProtectionSpace
}

/// Credentials given in answer to a challenge. Its descriptions never reveal a secret; `==`
/// compares every field.
public struct Credential: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible {
    /// A user name, if the method has one.
    public var user: String?
    /// A password, key passphrase or keyboard-interactive answer.
    public var password: String?
    /// A bearer token.
    public var token: String?
    /// A private key file for SSH public key authentication.
    public var privateKey: URL?
    /// The passphrase of ``privateKey``.
    public var passphrase: String?
    /// For ``AuthChallenge/Kind/serverTrust``: trust the presented identity (and record it).
    public var trustsServer: Bool
    /// Answers to keyboard-interactive prompts, in order.
    public var responses: [String]

    /// Creates a credential.
    public init(
        user: String? = nil, password: String? = nil, token: String? = nil, privateKey: URL? = nil,
        passphrase: String? = nil, trustsServer: Bool = false, responses: [String] = []
    ) {
        self.user = user
        self.password = password
        self.token = token
        self.privateKey = privateKey
        self.passphrase = passphrase
        self.trustsServer = trustsServer
        self.responses = responses
    }

    /// A credential that accepts a server identity.
    public static let trustServer = Credential(trustsServer: true)

    public var description: String {
        var parts: [String] = []
        if let user { parts.append("user: \(user)") }
        if password != nil { parts.append("password: <redacted>") }
        if token != nil { parts.append("token: <redacted>") }
        if let privateKey { parts.append("privateKey: \(privateKey.path)") }
        if passphrase != nil { parts.append("passphrase: <redacted>") }
        if trustsServer { parts.append("trustsServer") }
        if !responses.isEmpty { parts.append("responses: <\(responses.count) redacted>") }
        return "Credential(\(parts.joined(separator: ", ")))"
    }

    public var debugDescription: String { description }
}

extension Credential: CustomReflectable {
    public var customMirror: Mirror { Mirror(self, children: ["description": description]) }
}
