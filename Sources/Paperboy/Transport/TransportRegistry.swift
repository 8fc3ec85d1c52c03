import Foundation

/// The transports a library can use, keyed by URL scheme.
///
/// Built from values, so what a program ships is listed in one place:
/// ```swift
/// let transports = TransportRegistry([FileTransport(), HTTPTransport()])
/// ```
/// A later registration for the same scheme replaces the earlier one.
public struct TransportRegistry: Sendable {
    private var byScheme: [String: any Transport] = [:]

    /// Creates a registry holding `transports`.
    public init(_ transports: [any Transport] = []) {
        for transport in transports { register(transport) }
    }

    /// Adds `transport` for each of its schemes.
    public mutating func register(_ transport: any Transport) {
        for scheme in transport.schemes { byScheme[scheme.lowercased()] = transport }
    }

    /// The registered schemes, sorted.
    public var schemes: [String] { byScheme.keys.sorted() }

    /// The transport for `url`'s scheme.
    ///
    /// - Throws: ``TransportError`` `.unsupportedScheme`, naming the scheme and the registered ones.
    public func transport(for url: URL) throws -> any Transport {
        let scheme = (url.scheme ?? "file").lowercased()
        guard let transport = byScheme[scheme] else {
            let known = schemes.isEmpty ? "none" : schemes.joined(separator: ", ")
            throw TransportError(
                .unsupportedScheme,
                "no transport for scheme '\(scheme)' (registered: \(known))",
                url: url, isRetryable: false)
        }
        return transport
    }

    /// Turns `text` into a URL: a URL with a scheme as is, anything else as a file path
    /// (relative paths resolve against `base`).
    ///
    /// - Throws: ``TransportError`` `.badURL` for empty text, spaces in a URL, a URL with no host
    ///   where its scheme needs one, or text with `://` that is not a URL (never read as a path).
    public static func url(from text: String, relativeTo base: URL? = nil) throws -> URL {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        guard !trimmed.isEmpty, !trimmed.contains("\0") else {
            throw TransportError(.badURL, "empty URL", isRetryable: false)
        }
        if let schemeEnd = trimmed.firstIndex(of: ":"),
           trimmed[..<schemeEnd].count > 1,
           trimmed[..<schemeEnd].allSatisfy({ $0.isLetter || $0.isNumber || "+-.".contains($0) }),
           trimmed.first!.isLetter {
            if trimmed.contains(" ") {
                throw TransportError(.badURL, "URL '\(URL.redactedText(trimmed))' contains a space (encode it as %20)", isRetryable: false)
            }
            guard let url = URL(string: trimmed), url.scheme != nil else {
                throw TransportError(.badURL, "malformed URL '\(URL.redactedText(trimmed))'", isRetryable: false)
            }
            if url.scheme?.lowercased() != "file", (url.host ?? "").isEmpty {
                throw TransportError(.badURL, "URL '\(url.redactedString)' has no host", isRetryable: false)
            }
            return url
        }
        if trimmed.contains("://") {
            // Meant as a URL ("ht tp://host/x"), not as a file name.
            throw TransportError(
                .badURL, "malformed URL '\(URL.redactedText(trimmed))': expected a scheme such as https://", isRetryable: false)
        }
        let expanded = (trimmed as NSString).expandingTildeInPath
        if expanded.hasPrefix("/") { return URL(fileURLWithPath: expanded).standardizedFileURL }
        let folder = base ?? URL(fileURLWithPath: FileManager.default.currentDirectoryPath, isDirectory: true)
        return folder.appendingPathComponent(expanded).standardizedFileURL
    }
}
