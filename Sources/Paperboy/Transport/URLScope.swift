import Foundation

/// The URLs a credential or a per-host setting applies to: one origin (scheme, host, port) and
/// the paths under one path.
///
/// A scope is written as a URL, such as `https://cdn.example.com/premium`. It applies to a URL
/// when all of these hold:
/// - the schemes are equal, ignoring case;
/// - the hosts are equal, ignoring case and a trailing dot, after IDNA: `bücher.example` and
///   `xn--bcher-kva.example` are the same host;
/// - the ports are equal, a missing port being the scheme's default (http 80, https 443,
///   sftp and ssh 22, ftp 21, ftps 990);
/// - the URL's path starts with the scope's path on a `/` boundary: `/a` covers `/a`, `/a/`
///   and `/a/b`, not `/ab`. An empty path or `/` covers every path.
///
/// So `http://127.0.0.1` never covers `http://127.0.0.12/`, and `https://cdn.example.com`
/// never covers `https://cdn.example.com.evil.net/`. When several scopes cover a URL, the one
/// with the longest path is the most specific (``mostSpecific(_:for:scope:)``).
public struct URLScope: Sendable, Hashable, CustomStringConvertible {
    /// The scheme, lowercased.
    public let scheme: String
    /// The host, lowercased, in its ASCII (punycode) form, without a trailing dot.
    public let host: String
    /// The port, explicit or the scheme's default; `nil` for a scheme without a known default
    /// and no port written (it then covers only URLs without a port).
    public let port: Int?
    /// The path without a trailing `/` (empty for the whole origin), percent-encoded.
    public let path: String

    /// The scope of `url`: its origin and path. Returns `nil` when `url` has no scheme or no host.
    public init?(_ url: URL) {
        guard let origin = Self.origin(of: url) else { return nil }
        (scheme, host, port) = origin
        var path = Self.path(of: url)
        while path.hasSuffix("/") { path.removeLast() }
        self.path = path
    }

    /// The scope of the URL written `text`; `nil` when it is not a URL with a scheme and a host.
    public init?(string text: String) {
        guard let url = URL(string: text) else { return nil }
        self.init(url)
    }

    /// Whether this scope applies to `url`.
    public func contains(_ url: URL) -> Bool {
        guard let origin = Self.origin(of: url), origin.scheme == scheme, origin.host == host, origin.port == port else {
            return false
        }
        let requested = Self.path(of: url)
        guard requested.hasPrefix(path) else { return false }
        let rest = requested.dropFirst(path.count)
        return rest.isEmpty || rest.hasPrefix("/")
    }

    /// The element of `candidates` whose scope covers `url` with the longest path, if any.
    public static func mostSpecific<Element>(
        _ candidates: some Sequence<Element>, for url: URL, scope: (Element) -> URLScope
    ) -> Element? {
        var best: (element: Element, length: Int)?
        for candidate in candidates {
            let covering = scope(candidate)
            guard covering.contains(url), covering.path.count > best?.length ?? -1 else { continue }
            best = (candidate, covering.path.count)
        }
        return best?.element
    }

    /// The port a scheme uses when a URL names none.
    public static func defaultPort(forScheme scheme: String) -> Int? {
        switch scheme.lowercased() {
        case "http": 80
        case "https": 443
        case "sftp", "ssh", "scp": 22
        case "ftp": 21
        case "ftps": 990
        default: nil
        }
    }

    public var description: String {
        let shownPort = port.map { $0 == Self.defaultPort(forScheme: scheme) ? "" : ":\($0)" } ?? ""
        return "\(scheme)://\(host)\(shownPort)\(path)"
    }

    private static func origin(of url: URL) -> (scheme: String, host: String, port: Int?)? {
        guard let scheme = url.scheme?.lowercased(), !scheme.isEmpty else { return nil }
        // URLComponents gives the IDNA (punycode) form of a Unicode host; URL.host may not.
        let components = URLComponents(url: url, resolvingAgainstBaseURL: true)
        guard var host = (components?.encodedHost ?? url.host)?.lowercased() else { return nil }
        if host.hasSuffix(".") { host.removeLast() }
        guard !host.isEmpty else { return nil }
        return (scheme, host, url.port ?? defaultPort(forScheme: scheme))
    }

    /// The path with `.` and `..` segments resolved, as a server would see it.
    private static func path(of url: URL) -> String {
        let path = url.path(percentEncoded: true)
        guard path.contains("/.") else { return path }
        return url.standardized.path(percentEncoded: true)
    }
}
