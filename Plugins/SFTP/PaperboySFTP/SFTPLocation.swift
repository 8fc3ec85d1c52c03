import Foundation
import Paperboy

/// Where an `sftp:` URL points: host, port, user and the path to ask the server for.
///
/// `sftp://[user@]host[:port]/path` with percent-decoding. As with OpenSSH's `sftp` and curl,
/// `/path` is absolute and `/~/path` is relative to the login folder (the server resolves
/// relative paths against it).
struct SFTPLocation: Sendable, Hashable {
    var host: String
    var port: Int
    /// The user named in the URL, if any.
    var user: String?
    /// A password given in the URL (discouraged; tried once, first).
    var password: String?
    /// The path sent to the server, decoded.
    var path: String
    /// The URL without user and password, for messages and challenges.
    var url: URL

    /// Parses `url`.
    ///
    /// - Throws: ``TransportError`` `.badURL` for another scheme, no host, a bad port, no path,
    ///   or a path naming a folder.
    init(_ url: URL) throws {
        func bad(_ why: String) -> TransportError {
            TransportError(.badURL, "'\(url.redactedString)' \(why)", url: url, isRetryable: false)
        }
        guard url.scheme?.lowercased() == "sftp" else { throw bad("is not an sftp URL") }
        guard let components = URLComponents(url: url, resolvingAgainstBaseURL: false) else { throw bad("is malformed") }
        guard var host = components.percentEncodedHost, !host.isEmpty else { throw bad("has no host") }
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        self.host = host.removingPercentEncoding ?? host
        let port = components.port ?? 22
        guard (1...65535).contains(port) else { throw bad("has an invalid port") }
        self.port = port
        user = components.user.flatMap { $0.isEmpty ? nil : $0 }
        password = components.password
        guard let decoded = components.percentEncodedPath.removingPercentEncoding else {
            throw bad("has a path that is not valid percent-encoded UTF-8")
        }
        guard !decoded.contains("\0") else { throw bad("has a NUL byte in its path") }
        var path = decoded
        if path == "/~" || path == "/~/" {
            path = "."
        } else if path.hasPrefix("/~/") {
            path = String(path.dropFirst(3))
        }
        guard !path.isEmpty, path != "/" else { throw bad("names no file") }
        guard !path.hasSuffix("/") else { throw bad("names a folder, not a file") }
        self.path = path
        self.url = url.redacted
    }

    /// `[host]:port` as known_hosts files and OpenSSH's messages spell it (`host` for port 22).
    var knownHostsName: String {
        port == 22 ? host : "[\(host)]:\(port)"
    }
}
