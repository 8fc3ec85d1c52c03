import Foundation

/// Turns paths and URLs written in the configuration into absolute URLs.
struct PathResolution {
    /// The folder holding the configuration file; relative paths start here.
    let baseDirectory: URL
    /// The home folder, for `~/` paths.
    let home: String

    init(fileURL: URL, environment: [String: String]) {
        self.baseDirectory = fileURL.standardizedFileURL.deletingLastPathComponent()
        self.home = Self.homeDirectory(environment: environment)
    }

    static func homeDirectory(environment: [String: String]) -> String {
        if let home = environment["HOME"], !home.isEmpty { return home }
        return NSHomeDirectory()
    }

    /// Resolves a file path: `~/x` in the home folder, `/x` as is, anything else in the
    /// configuration's folder.
    func fileURL(forPath path: String) -> URL {
        if path == "~" { return URL(fileURLWithPath: home, isDirectory: true) }
        if path.hasPrefix("~/") {
            return URL(fileURLWithPath: home).appendingPathComponent(String(path.dropFirst(2))).standardizedFileURL
        }
        if path.hasPrefix("/") { return URL(fileURLWithPath: path).standardizedFileURL }
        return baseDirectory.appendingPathComponent(path).standardizedFileURL
    }

    /// Unicode's control category (Cc), with ASCII answered without a property lookup (they
    /// showed in profiles of configurations with thousands of assets).
    static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        if scalar.isASCII { return scalar.value < 0x20 || scalar.value == 0x7F }
        return scalar.properties.generalCategory == .control
    }

    /// Unicode's White_Space property, with ASCII answered without a property lookup.
    static func isWhitespace(_ scalar: Unicode.Scalar) -> Bool {
        if scalar.isASCII { return scalar == " " || (0x09...0x0D).contains(scalar.value) }
        return scalar.properties.isWhitespace
    }

    /// Whether text starts with a URL scheme such as `https:` or `file:`.
    static func hasScheme(_ text: String) -> Bool {
        // On bytes: a scheme is ASCII (RFC 3986: ALPHA *( ALPHA / DIGIT / "+" / "-" / "." )).
        var isFirst = true
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: ":"):
                return !isFirst
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"):
                break
            case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."):
                if isFirst { return false }
            default:
                return false
            }
            isFirst = false
        }
        return false
    }

    /// Resolves a URL with a scheme, or a path (relative to the configuration's folder) as a file URL.
    func url(for text: String) throws(ConfigValueError) -> URL {
        guard !text.isEmpty else { throw ConfigValueError("expected a URL or a path, got an empty string") }
        if text.unicodeScalars.contains(where: Self.isControl) {
            throw ConfigValueError("a URL or path must not contain control characters")
        }
        // "ht tp://host/x" has no valid scheme, but it was meant as a URL, not a file name.
        guard Self.hasScheme(text) || text.contains("://") else {
            return fileURL(forPath: text)
        }
        return try Self.parseURL(text)
    }

    /// URL text for a message: a user and password (between `://` and `@`) shown as `…`.
    static func redacted(_ text: String) -> String {
        guard let schemeEnd = text.range(of: "://"), let at = text[schemeEnd.upperBound...].firstIndex(of: "@") else { return text }
        return text.replacingCharacters(in: schemeEnd.upperBound..<at, with: "…")
    }

    /// Parses a URL that must have a scheme; rejects spaces and, for network schemes, a missing host.
    static func parseURL(_ text: String) throws(ConfigValueError) -> URL {
        guard !text.isEmpty else { throw ConfigValueError("expected a URL, got an empty string") }
        if let bad = text.unicodeScalars.first(where: { Self.isWhitespace($0) || Self.isControl($0) }) {
            let what = bad == " " ? "a space" : "whitespace or a control character"
            throw ConfigValueError("invalid URL \"\(redacted(text))\": it contains \(what) (percent-encode it as %20)")
        }
        guard hasScheme(text), let url = URL(string: text), let scheme = url.scheme, !scheme.isEmpty else {
            throw ConfigValueError("invalid URL \"\(redacted(text))\": expected a URL with a scheme, such as https://host/path")
        }
        if ["http", "https", "sftp", "ftp", "ftps", "scp"].contains(scheme.lowercased()),
           url.host == nil || url.host?.isEmpty == true {
            throw ConfigValueError("invalid URL \"\(redacted(text))\": a \(scheme.lowercased()) URL needs a host")
        }
        return url
    }
}
