import Foundation

/// The URLs a credential or a per-host setting applies to: one origin (scheme, host, port) and
/// the paths under one path. Every place Paperboy decides whether a URL belongs to another
/// (credentials, per-host options, SFTP settings, redirects, catalogs, the conformance suite)
/// asks this type, so that one reading of URLs serves every door.
///
/// A scope is written as a URL, such as `https://cdn.example.com/premium`. It applies to a URL
/// when all of these hold:
/// - the schemes are equal, ignoring case;
/// - the hosts are equal after IDNA (UTS 46: case folded, `。` and `．` read as `.`, Unicode
///   as punycode, so `bücher.example` and `xn--bcher-kva.example` are one host), ignoring one
///   trailing dot;
/// - the ports are equal, a missing port being the scheme's default (http 80, https 443,
///   sftp and ssh 22, ftp 21, ftps 990);
/// - the URL's path, normalized as a server reads it (RFC 3986 §6.2.2,
///   encoded dot segments such as `%2e%2e` resolved), is the scope's path or under it on a
///   `/` boundary: `/a` covers `/a`, `/a/` and `/a/b`, not `/ab`. An empty path or `/` covers
///   every path. The query and fragment play no part.
///
/// So `http://127.0.0.1` never covers `http://127.0.0.12/`, `https://cdn.example.com` never
/// covers `https://cdn.example.com.evil.net/`, and `http://h/premium` never covers
/// `http://h/premium/%2e%2e/other/x`, which nginx serves from `/other/`. When several scopes
/// cover a URL, the one with the longest path is the most specific
/// (``mostSpecific(_:for:scope:)``).
///
/// Spellings that servers read differently never match, so that no reading can take a
/// credential somewhere else:
/// - a path that normalization refuses (an encoded `/` or `\`, a literal `\`, double encoding,
///   a dot segment with `;params`, dots as Unicode look-alikes, control bytes) is covered only
///   by a scope for the whole origin, which covers every path;
/// - a host with a percent-escape (`cdn%2eexample.com`), other spellings of an address
///   (`0x7f.0.0.1` is not `127.0.0.1`, `[0:0::1]` is not `[::1]`), and text that differs in any
///   other way are other hosts;
/// - a URL whose user or password holds a `\` (`http://evil.net\@example.com/`, which a
///   browser sends to evil.net) has no origin;
/// - a scope written with such a path or host is not a scope (``init(_:)`` returns `nil`).
///
/// The user and password in a URL name an account, not an origin: they are ignored.
public struct URLScope: Sendable, Hashable, CustomStringConvertible {
    /// The scheme, lowercased.
    public let scheme: String
    /// The host, lowercased, in its ASCII (punycode) form, without a trailing dot.
    public let host: String
    /// The port, explicit or the scheme's default; `nil` for a scheme without a known default
    /// and no port written (it then covers only URLs without a port).
    public let port: Int?
    /// The normalized path without a trailing `/` (empty for the whole origin), percent-encoded.
    public let path: String

    /// The scope of `url`: its origin and normalized path. Returns `nil` when `url` has no
    /// scheme or no host, or when servers may read its host or path differently.
    public init?(_ url: URL) {
        guard let origin = Origin(url), let normalized = try? NormalizedPath(url) else { return nil }
        (scheme, host, port) = (origin.scheme, origin.host, origin.port)
        path = normalized.text == "/" ? "" : String(normalized.text.trimmingSuffix("/"))
    }

    /// The scope of the URL written `text`; `nil` when it is not a URL with a scheme and a host.
    public init?(string text: String) {
        guard let url = URL(string: text) else { return nil }
        self.init(url)
    }

    /// Whether this scope applies to `url`.
    public func contains(_ url: URL) -> Bool {
        contains(Target(url))
    }

    /// The scope of the whole origin: the same scheme, host and port, every path.
    public var origin: URLScope { URLScope(scheme: scheme, host: host, port: port, path: "") }

    /// The element of `candidates` whose scope covers `url` with the longest path, if any.
    public static func mostSpecific<Element>(
        _ candidates: some Sequence<Element>, for url: URL, scope: (Element) -> URLScope
    ) -> Element? {
        // Read on the first candidate: most lists (per-host options, SFTP rules) are empty.
        var target: Target?
        var best: (element: Element, length: Int)?
        for candidate in candidates {
            let covering = scope(candidate)
            guard covering.path.count > best?.length ?? -1 else { continue }
            let read = target ?? Target(url)
            target = read
            guard covering.contains(read) else { continue }
            best = (candidate, covering.path.count)
        }
        return best?.element
    }

    /// Whether `first` and `second` have the same scheme, host and port, read as ``URLScope``
    /// reads them; `false` when either has no origin.
    public static func isSameOrigin(_ first: URL, _ second: URL) -> Bool {
        guard let one = Origin(first), let other = Origin(second) else { return false }
        return one == other
    }

    /// `url` with its path in normal form (``NormalizedPath``): what a server reads, spelled
    /// the way ``URLScope`` compares it. `nil` when `url` has no hierarchical path or servers
    /// may read its path differently.
    package static func normalized(_ url: URL) -> URL? {
        let absolute = url.absoluteURL
        guard let normal = try? NormalizedPath(absolute),
              var components = URLComponents(url: absolute, resolvingAgainstBaseURL: false) else { return nil }
        if components.percentEncodedPath.isEmpty, normal.text == "/" { return absolute }
        components.percentEncodedPath = normal.text
        return components.url
    }

    /// Why `url` is not a scope, as words following the URL (`names no host`); `nil` when it is one.
    package static func problem(with url: URL) -> String? {
        guard URLScope(url) == nil else { return nil }
        if (url.host ?? "").isEmpty { return "names no host" }
        if Origin(url) == nil { return "has a host or user with a percent-escape or a backslash, which servers read differently" }
        do {
            _ = try NormalizedPath(url)
            return nil
        } catch {
            return "has a path servers read differently: \(error)"
        }
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

    private init(scheme: String, host: String, port: Int?, path: String) {
        (self.scheme, self.host, self.port, self.path) = (scheme, host, port, path)
    }

    private func contains(_ target: Target) -> Bool {
        guard let origin = target.origin, origin.scheme == scheme, origin.host == host, origin.port == port else {
            return false
        }
        if path.isEmpty { return true }
        return target.path?.isWithin(path) ?? false
    }

    /// A URL read once for several scopes.
    private struct Target {
        let origin: Origin?
        let path: NormalizedPath?

        init(_ url: URL) {
            origin = Origin(url)
            path = origin == nil ? nil : try? NormalizedPath(url)
        }
    }

    /// A URL's scheme, host and port, normalized.
    private struct Origin: Hashable {
        let scheme: String
        let host: String
        let port: Int?

        init?(_ url: URL) {
            let url = url.absoluteURL
            guard let scheme = url.scheme?.lowercased(), !scheme.isEmpty else { return nil }
            // URLComponents gives the IDNA (punycode) form of a Unicode host; URL.host may not.
            let components = URLComponents(url: url, resolvingAgainstBaseURL: false)
            guard var host = (components?.encodedHost ?? url.host)?.lowercased(), !host.contains("%") else { return nil }
            if host.hasSuffix(".") { host.removeLast() }
            guard !host.isEmpty else { return nil }
            // `evil.net\@example.com` is example.com to Foundation and curl, evil.net to a browser.
            let userinfo = (components?.percentEncodedUser ?? "") + (components?.percentEncodedPassword ?? "")
            guard !userinfo.contains("\\"), userinfo.range(of: "%5C", options: .caseInsensitive) == nil else { return nil }
            self.scheme = scheme
            self.host = host
            self.port = url.port ?? URLScope.defaultPort(forScheme: scheme)
        }
    }
}

extension StringProtocol {
    fileprivate func trimmingSuffix(_ suffix: String) -> SubSequence {
        var text = self[...]
        while text.hasSuffix(suffix) { text = text.dropLast(suffix.count) }
        return text
    }
}
