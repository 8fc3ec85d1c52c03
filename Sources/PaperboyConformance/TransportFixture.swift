#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import Paperboy

/// What a transport's test provides so that ``TransportConformance`` can exercise it: a way to
/// publish bytes at a URL the transport serves, and optionally URLs that misbehave on purpose.
///
/// Only ``publish(_:as:)``, ``replace(_:with:)`` and ``missingURL()`` are required. The other
/// methods return `nil` by default; a check that needs one of them is then skipped with a note
/// (a warning in the test output), never silently passed.
public protocol TransportFixture: Sendable {
    /// Makes `data` available under `name` and returns the URL the transport fetches it from.
    ///
    /// Each call uses a fresh `name`; publishing empty data must work.
    func publish(_ data: Data, as name: String) async throws -> URL

    /// Replaces what `url` serves with `data`, as a publisher updating the file would: the
    /// transport must report a different validator afterwards.
    func replace(_ url: URL, with data: Data) async throws

    /// A URL the transport answers with "not found".
    func missingURL() async throws -> URL

    /// Publishes `data` behind authentication that refuses every credential.
    func publishRefusingCredentials(_ data: Data, as name: String) async throws -> URL?

    /// Publishes `data` behind authentication that accepts the returned credential.
    ///
    /// The transport must raise a challenge through ``TransferSink/challenge(_:)`` and use the
    /// credential it gets back.
    func publishProtected(_ data: Data, as name: String) async throws -> (url: URL, credential: Credential)?

    /// Publishes `data` at a URL whose connection drops after `bytes` bytes, on every request.
    func publishDropping(_ data: Data, as name: String, after bytes: Int) async throws -> URL?

    /// Publishes `data` at a URL whose server ignores resume requests and always sends the
    /// whole resource (an HTTP server answering 200 to a `Range` request).
    func publishIgnoringRanges(_ data: Data, as name: String) async throws -> URL?
}

extension TransportFixture {
    public func publishRefusingCredentials(_ data: Data, as name: String) async throws -> URL? { nil }
    public func publishProtected(_ data: Data, as name: String) async throws -> (url: URL, credential: Credential)? { nil }
    public func publishDropping(_ data: Data, as name: String, after bytes: Int) async throws -> URL? { nil }
    public func publishIgnoringRanges(_ data: Data, as name: String) async throws -> URL? { nil }
}

/// A fixture backed by a temporary folder, for transports that serve local files under some
/// URL scheme (`file:`, an archive reader, an out-of-process helper serving a folder).
///
/// ```swift
/// let fixture = FolderFixture { file in file }                        // FileTransport
/// let fixture = FolderFixture { file in URL(string: "tree://pub/\(file.lastPathComponent)")! }
/// ```
/// Replacing a file writes a new file and renames it over the old one, so its size, inode
/// and modification time all change. The folder is removed when the fixture is released.
public final class FolderFixture: TransportFixture, @unchecked Sendable {
    /// The temporary folder holding the published files.
    public let folder: URL
    private let makeURL: @Sendable (URL) -> URL

    /// Creates a fixture in a new temporary folder.
    ///
    /// - Parameter makeURL: turns the published file's location into the URL the transport serves.
    public init(makeURL: @escaping @Sendable (URL) -> URL = { $0 }) {
        folder = FileManager.default.temporaryDirectory
            .appendingPathComponent("paperboy-fixture-\(UUID().uuidString)", isDirectory: true)
        try? FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        self.makeURL = makeURL
    }

    deinit { try? FileManager.default.removeItem(at: folder) }

    /// The file behind a published name.
    public func file(_ name: String) -> URL { folder.appendingPathComponent(name) }

    public func publish(_ data: Data, as name: String) async throws -> URL {
        let file = file(name)
        try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        try data.write(to: file)
        return makeURL(file)
    }

    public func replace(_ url: URL, with data: Data) async throws {
        guard let name = published(url) else {
            throw TransportError(.notFound, "the fixture did not publish \(url.redactedString)", url: url)
        }
        // A rename gives the new version its own inode, as publishers' atomic updates do; the
        // server reads it as another user may (0644).
        try AtomicFile.write(data, to: file(name), mode: 0o644, durable: false)
    }

    public func missingURL() async throws -> URL { makeURL(file("missing-\(UUID().uuidString).bin")) }

    /// The name under which `url` was published, found by asking `makeURL` for each file.
    private func published(_ url: URL) -> String? {
        let names = (try? FileManager.default.subpathsOfDirectory(atPath: folder.path)) ?? []
        return names.first { makeURL(file($0)) == url }
    }
}
