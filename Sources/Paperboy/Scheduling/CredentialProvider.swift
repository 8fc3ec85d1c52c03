import Foundation

/// Answers authentication challenges from configuration, before the app's delegate is asked.
public protocol CredentialProvider: Sendable {
    /// The configured credential for `challenge`, or `nil` to ask the delegate.
    func credential(for challenge: AuthChallenge) -> Credential?
}

/// Credentials matched by URL prefix (the `[[credentials]]` entries of a configuration file).
public struct PrefixCredentials: CredentialProvider {
    /// One rule: URLs starting with `prefix` use `credential`.
    public struct Rule: Sendable {
        public var prefix: String
        public var credential: Credential
        public init(prefix: String, credential: Credential) {
            self.prefix = prefix
            self.credential = credential
        }
    }

    /// The rules; the longest matching prefix wins.
    public var rules: [Rule]

    /// Creates a provider.
    public init(_ rules: [Rule]) { self.rules = rules }

    public func credential(for challenge: AuthChallenge) -> Credential? {
        let url = challenge.url.redactedString
        return rules.filter { url.hasPrefix($0.prefix) }.max { $0.prefix.count < $1.prefix.count }?.credential
    }
}
