import Foundation

/// What to download for one asset: the analog of NSURLRequest in NewsstandKit.
public struct AssetRequest: Sendable, Hashable, Codable {
    /// The source. Plain paths become `file:` URLs (see ``TransportRegistry/url(from:relativeTo:)``).
    public var url: URL
    /// Extra request headers for transports that have them.
    public var headers: [String: String]
    /// The expected SHA-256 of the whole file, as 64 hexadecimal digits; verified before delivery.
    public var sha256: String?
    /// Higher runs first; first in, first out within one priority.
    public var priority: Int
    /// Where the finished file lands, relative to the content folder.
    ///
    /// When `nil`, the finished file waits in the library's inbox until a delegate takes it in
    /// ``AssetDownloadDelegate/download(_:didFinishDownloadingTo:)``.
    public var destinationPath: String?
    /// Transport-specific options.
    public var options: [String: String]
    /// A limit for this transfer alone, in bytes per second (the global limit applies too).
    public var maxBytesPerSecond: Int64?
    /// Changes to the library's default network policy for this asset.
    public var network: NetworkPolicyOverride?
    /// When set, the verified file is an archive extracted into the issue folder (and then
    /// removed) instead of being moved to ``destinationPath``.
    public var unpack: UnpackFormat?
    /// What the asset is to a shelf: content, or the cover.
    public var role: AssetRole
    /// The asset's chunk index (`FILE.pbidx`, docs/ChunkIndex.md), when the publisher made one:
    /// the library then copies the chunks it already holds (the version delivered before to the
    /// same path) and fetches only the others, as ranges, when the transport can
    /// (``TransportCapabilities/ranges``). `nil` fetches the file whole.
    public var index: URL?

    /// Other URLs serving the same bytes as ``url`` (the same size and validator), which a
    /// transport that fetches ranges may fetch pieces from at once (``TransferJob/mirrors``).
    ///
    /// A mirror whose size or validator disagrees with ``url``'s is dropped for the transfer
    /// before any of its bytes is written; ``sha256`` checks the whole file either way. A
    /// mirror is a URL like ``url``: it may hold no password, and a credential is sent to it
    /// only when a configured credential's scope covers the mirror itself (``URLScope``).
    public var mirrors: [URL] = []

    /// Creates a request.
    public init(
        url: URL, headers: [String: String] = [:], sha256: String? = nil, priority: Int = 0,
        destinationPath: String? = nil, options: [String: String] = [:], maxBytesPerSecond: Int64? = nil,
        network: NetworkPolicyOverride? = nil, unpack: UnpackFormat? = nil, role: AssetRole = .content
    ) {
        self.url = url
        self.headers = headers
        self.sha256 = sha256?.lowercased()
        self.priority = priority
        self.destinationPath = destinationPath
        self.options = options
        self.maxBytesPerSecond = maxBytesPerSecond
        self.network = network
        self.unpack = unpack
        self.role = role
    }

    private enum CodingKeys: String, CodingKey {
        case url, headers, sha256, priority, destinationPath, options, maxBytesPerSecond, network, unpack, role, index, mirrors
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        url = try container.decode(URL.self, forKey: .url)
        headers = try container.decodeIfPresent([String: String].self, forKey: .headers) ?? [:]
        sha256 = try container.decodeIfPresent(String.self, forKey: .sha256)
        priority = try container.decodeIfPresent(Int.self, forKey: .priority) ?? 0
        destinationPath = try container.decodeIfPresent(String.self, forKey: .destinationPath)
        options = try container.decodeIfPresent([String: String].self, forKey: .options) ?? [:]
        maxBytesPerSecond = try container.decodeIfPresent(Int64.self, forKey: .maxBytesPerSecond)
        network = try container.decodeIfPresent(NetworkPolicyOverride.self, forKey: .network)
        unpack = try container.decodeIfPresent(UnpackFormat.self, forKey: .unpack)
        role = try container.decodeIfPresent(AssetRole.self, forKey: .role) ?? .content
        index = try container.decodeIfPresent(URL.self, forKey: .index)
        mirrors = try container.decodeIfPresent([URL].self, forKey: .mirrors) ?? []
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(url, forKey: .url)
        try container.encode(headers, forKey: .headers)
        try container.encodeIfPresent(sha256, forKey: .sha256)
        try container.encode(priority, forKey: .priority)
        try container.encodeIfPresent(destinationPath, forKey: .destinationPath)
        try container.encode(options, forKey: .options)
        try container.encodeIfPresent(maxBytesPerSecond, forKey: .maxBytesPerSecond)
        try container.encodeIfPresent(network, forKey: .network)
        try container.encodeIfPresent(unpack, forKey: .unpack)
        try container.encode(role, forKey: .role)
        try container.encodeIfPresent(index, forKey: .index)
        // Left out when empty, so that requests without mirrors read as they always did.
        if !mirrors.isEmpty { try container.encode(mirrors, forKey: .mirrors) }
    }

    /// Whether the core delivers the file itself (to a destination path, or by unpacking it)
    /// rather than waiting for a delegate to take it.
    var deliversItself: Bool { destinationPath != nil || unpack != nil }

    /// Checks the parts a transport does not: no password in the URL (it would be stored in
    /// the library's database), the checksum format, the destination path and the rate
    /// (``ByteCount/rate(_:door:)``).
    package func validated() throws(LibraryError) -> AssetRequest {
        // Every URL of the request is stored: none may hold a password.
        let sources = [("the URL", url)] + mirrors.map { ("the mirror", $0) } + (index.map { [("the index URL", $0)] } ?? [])
        for (which, source) in sources where source.password != nil {
            throw LibraryError(
                .invalidRequest,
                "\(which) \(source.redactedString) holds a password (user:password@), which the library would store; "
                    + "give it as a credential instead (a [[credentials]] entry, or the delegate's answer to the challenge)")
        }
        if let sha256 {
            guard sha256.count == 64, sha256.allSatisfy(\.isHexDigit) else {
                throw LibraryError(.invalidRequest, "expected SHA-256 of \(url.redactedString) must be 64 hexadecimal digits, got '\(sha256)'")
            }
        }
        if let destinationPath { _ = try RelativePath(destinationPath, door: "destination path") }
        if let maxBytesPerSecond {
            do throws(BoundaryError) {
                _ = try ByteCount.rate(maxBytesPerSecond, door: "maxBytesPerSecond of \(url.redactedString)")
            } catch {
                throw LibraryError(error)
            }
        }
        return self
    }
}

/// What an asset is to a shelf.
public enum AssetRole: String, Sendable, Hashable, Codable {
    /// The content.
    case content
    /// The cover image: once delivered, ``Issue/coverURL`` points to it.
    case cover
}
