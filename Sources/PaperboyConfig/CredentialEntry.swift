import Foundation
import Paperboy

/// A `[[credentials]]` entry: what to answer when a URL in ``scope`` asks for authentication.
///
/// Secrets are never written inline: they come from an environment variable (`*_env`) or a
/// file (`*_file`, relative to the configuration's folder).
public struct CredentialEntry: Sendable {
    /// The URL this entry applies to (`match`), exactly as written; see ``scope``.
    public var match: String
    /// ``match`` parsed as a URL.
    public var matchURL: URL
    /// The user name (`username`).
    public var username: String?
    /// The password (`password_env` or `password_file`).
    public var password: Secret?
    /// A bearer token (`token_env` or `token_file`).
    public var token: Secret?
    /// An SSH private key file (`private_key`); not checked at load time.
    public var privateKey: URL?
    /// The private key's passphrase (`passphrase_env` or `passphrase_file`).
    public var passphrase: Secret?
    /// An OpenSSH known_hosts file (`known_hosts`); not checked at load time.
    public var knownHosts: URL?
    /// A PEM file of certificate authorities to trust (`ca_file`); not checked at load time.
    public var caFile: URL?
    /// The line of the `[[credentials]]` header, if known.
    public var line: Int?

    /// Creates a credential entry.
    public init(
        match: String,
        matchURL: URL,
        username: String? = nil,
        password: Secret? = nil,
        token: Secret? = nil,
        privateKey: URL? = nil,
        passphrase: Secret? = nil,
        knownHosts: URL? = nil,
        caFile: URL? = nil,
        line: Int? = nil
    ) {
        self.match = match
        self.matchURL = matchURL
        self.username = username
        self.password = password
        self.token = token
        self.privateKey = privateKey
        self.passphrase = passphrase
        self.knownHosts = knownHosts
        self.caFile = caFile
        self.line = line
    }

    /// The origin and path this entry applies to (``matchURL`` as a ``URLScope``); `nil` when
    /// ``matchURL`` has no host, which a configuration file refuses.
    public var scope: URLScope? { URLScope(matchURL) }

    /// Whether this entry applies to `url`: same scheme, host and port, and a path under the
    /// match's path on a `/` boundary, both normalized (see ``URLScope``).
    public func matches(_ url: URL) -> Bool {
        scope?.contains(url) ?? false
    }
}
