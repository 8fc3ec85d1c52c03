#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import Paperboy
import Synchronization

/// A fixture for a transport whose server already runs: a folder the suite writes source files
/// into, and the URL under which the server serves that folder (what `paperboy conformance`
/// builds from `--served-folder` and `--base-url`).
///
/// Optional parts unlock more checks: a second folder served behind authentication with the
/// credential it accepts (`challenges`, and `authentication-refused`, where the suite answers
/// with a wrong password), and URL templates for a source that drops the connection or ignores
/// resume requests (`{url}` is the file's URL, `{bytes}` the byte count). Files the fixture
/// wrote are removed by ``removePublished()``; nothing else in the folders is touched.
public final class ServedFolderFixture: TransportFixture, Sendable {
    /// A folder and the URL it is served under.
    public struct Served: Sendable {
        public var folder: URL
        public var baseURL: URL

        /// Creates a served folder; `baseURL` gets a trailing `/` when it has none.
        public init(folder: URL, baseURL: URL) {
            self.folder = folder
            let text = baseURL.absoluteString
            self.baseURL = text.hasSuffix("/") ? baseURL : URL(string: text + "/") ?? baseURL
        }
    }

    public let open: Served
    public let protected: (served: Served, credential: Credential)?
    /// `{url}` and `{bytes}` give the URL of a file whose connection drops after that many bytes.
    public let droppingTemplate: String?
    /// `{url}` gives the URL of a file whose server ignores resume requests.
    public let ignoringRangesTemplate: String?
    private let files = Mutex<[URL]>([])

    /// Creates the fixture.
    public init(open: Served, protected: (served: Served, credential: Credential)? = nil,
                droppingTemplate: String? = nil, ignoringRangesTemplate: String? = nil) {
        self.open = open
        self.protected = protected
        self.droppingTemplate = droppingTemplate
        self.ignoringRangesTemplate = ignoringRangesTemplate
    }

    public func publish(_ data: Data, as name: String) async throws -> URL {
        try write(data, name, in: open)
    }

    public func replace(_ url: URL, with data: Data) async throws {
        guard let (served, name) = locate(url) else {
            throw TransportError(.notFound, "the fixture did not publish \(url.redactedString)", url: url)
        }
        // A rename gives the new version its own inode, as publishers' atomic updates do; the
        // server reads it as another user may (0644).
        try AtomicFile.write(data, to: served.folder.appendingPathComponent(name), mode: 0o644, durable: false)
    }

    public func missingURL() async throws -> URL { url(of: "missing-\(UUID().uuidString).bin", in: open) }

    public func publishProtected(_ data: Data, as name: String) async throws -> (url: URL, credential: Credential)? {
        guard let protected else { return nil }
        return (try write(data, name, in: protected.served), protected.credential)
    }

    public func publishRefusingCredentials(_ data: Data, as name: String) async throws -> URL? {
        // The suite answers this one with a wrong password: the protected folder refuses it.
        guard let protected else { return nil }
        return try write(data, name, in: protected.served)
    }

    public func publishDropping(_ data: Data, as name: String, after bytes: Int) async throws -> URL? {
        guard let droppingTemplate else { return nil }
        return try expand(droppingTemplate, try write(data, name, in: open), bytes: bytes)
    }

    public func publishIgnoringRanges(_ data: Data, as name: String) async throws -> URL? {
        guard let ignoringRangesTemplate else { return nil }
        return try expand(ignoringRangesTemplate, try write(data, name, in: open), bytes: 0)
    }

    /// Removes every file the fixture wrote.
    public func removePublished() {
        let published = files.withLock { files in defer { files = [] }; return files }
        for file in published { try? FileManager.default.removeItem(at: file) }
    }

    private func write(_ data: Data, _ name: String, in served: Served) throws -> URL {
        let file = served.folder.appendingPathComponent(name)
        files.withLock { $0.append(file) }
        try data.write(to: file)
        return url(of: name, in: served)
    }

    private func url(of name: String, in served: Served) -> URL {
        let escaped = name.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) ?? name
        return URL(string: escaped, relativeTo: served.baseURL)!.absoluteURL
    }

    /// The served folder and file name behind a URL this fixture returned.
    private func locate(_ url: URL) -> (Served, String)? {
        for served in [open] + (protected.map { [$0.served] } ?? []) {
            let base = served.baseURL.absoluteString
            let text = url.absoluteString
            if text.hasPrefix(base), let name = String(text.dropFirst(base.count)).removingPercentEncoding, !name.contains("/") {
                return (served, name)
            }
        }
        return nil
    }

    private func expand(_ template: String, _ url: URL, bytes: Int) throws -> URL {
        let text = template.replacingOccurrences(of: "{url}", with: url.absoluteString)
            .replacingOccurrences(of: "{bytes}", with: String(bytes))
        guard let expanded = URL(string: text) else {
            throw TransportError(.badURL, "the template \(template) gives \(text), which is not a URL", url: url, isRetryable: false)
        }
        return expanded
    }
}
