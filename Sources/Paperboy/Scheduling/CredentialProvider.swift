import Foundation

/// Answers authentication challenges from configuration, before the app's delegate is asked.
public protocol CredentialProvider: Sendable {
    /// The configured credential for `challenge`, or `nil` to ask the delegate.
    func credential(for challenge: AuthChallenge) -> Credential?
}

/// Credentials bound to origins (the `[[credentials]]` entries of a configuration file).
///
/// A rule answers a challenge when its ``URLScope`` covers the URL that asks: the fetched URL
/// for a server's challenge, the proxy's URL (``AuthChallenge/proxyURL``) for a proxy's. So a
/// rule for an origin never answers its proxy, and a proxy is answered only by a rule written
/// for the proxy's own URL. The rule with the longest path wins. URLs are compared as
/// ``URLScope`` reads them (normalized; `/premium/%2e%2e/other` is not under `/premium`).
public struct OriginCredentials: CredentialProvider {
    /// One rule: URLs in `scope` use `credential`.
    public struct Rule: Sendable {
        /// The URLs this credential is for.
        public var scope: URLScope
        /// What to answer.
        public var credential: Credential

        /// Creates a rule.
        public init(scope: URLScope, credential: Credential) {
            self.scope = scope
            self.credential = credential
        }
    }

    /// The rules; the most specific covering rule wins.
    public var rules: [Rule]

    /// Creates a provider.
    public init(_ rules: [Rule]) { self.rules = rules }

    public func credential(for challenge: AuthChallenge) -> Credential? {
        let asking: URL
        if challenge.isProxy {
            // A proxy that did not say who it is gets nothing from configuration.
            guard let proxy = challenge.proxyURL else { return nil }
            asking = proxy
        } else {
            asking = challenge.url
        }
        return URLScope.mostSpecific(rules, for: asking, scope: \.scope)?.credential
    }
}

/// The former name of ``OriginCredentials``, which matched URLs by text prefix.
@available(*, deprecated, renamed: "OriginCredentials")
public typealias PrefixCredentials = OriginCredentials
