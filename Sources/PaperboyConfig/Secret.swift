import Foundation

/// A password, token or passphrase that never shows up in logs, descriptions or dumps.
///
/// A secret comes from an environment variable (read when the configuration is loaded) or
/// from a file (read each time ``reveal()`` is called). Printing it shows only where it comes
/// from, such as `Secret(env: CDN_PASSWORD)`.
public struct Secret: Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// Where a secret's value comes from.
    public enum Source: Hashable, Sendable {
        /// An environment variable, by name.
        case environment(String)
        /// A file whose contents (minus one trailing newline) are the value.
        case file(URL)
    }

    /// Where the value comes from; safe to show.
    public let source: Source
    private let environmentValue: String?

    /// Creates a secret from an environment variable's name and its value.
    public init(environmentVariable name: String, value: String) {
        self.source = .environment(name)
        self.environmentValue = value
    }

    /// Creates a secret read from a file each time it is revealed.
    public init(file: URL) {
        self.source = .file(file)
        self.environmentValue = nil
    }

    /// Returns the secret's value; pass it straight to the code that needs it.
    ///
    /// A file secret is read now, and one trailing newline (`\n` or `\r\n`) is removed.
    /// - Throws: ``ConfigError`` naming the file when it cannot be read.
    public func reveal() throws(ConfigError) -> String {
        switch source {
        case .environment:
            return environmentValue ?? ""
        case .file(let url):
            let data: Data
            do {
                data = try Data(contentsOf: url)
            } catch {
                throw ConfigError(
                    code: .missingSecretFile, file: url,
                    message: "cannot read secret file '\(url.path)'", underlying: error
                )
            }
            guard var text = String(data: data, encoding: .utf8) else {
                throw ConfigError(code: .unreadable, file: url, message: "secret file '\(url.path)' is not UTF-8")
            }
            // "\r\n" is a single Character in Swift.
            if text.last == "\n" || text.last == "\r\n" {
                text.removeLast()
            }
            return text
        }
    }

    /// `Secret(env: NAME)` or `Secret(file: /path)`, never the value.
    public var description: String {
        switch source {
        case .environment(let name): "Secret(env: \(name))"
        case .file(let url): "Secret(file: \(url.path))"
        }
    }

    /// The same as ``description``.
    public var debugDescription: String { description }

    /// A mirror without children, so `dump` and reflection cannot reach the value.
    public var customMirror: Mirror {
        Mirror(self, children: [:], displayStyle: .struct)
    }
}
