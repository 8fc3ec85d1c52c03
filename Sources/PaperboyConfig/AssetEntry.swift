import Foundation

/// An `[[issues.assets]]` entry: one file of an issue.
public struct AssetEntry: Sendable, Equatable {
    /// What to do with the file once downloaded and verified.
    public enum Unpack: String, Sendable, CaseIterable {
        /// Extract a zip archive into the folder.
        case zip
    }

    /// What the asset is to a shelf UI.
    public enum Role: String, Sendable, CaseIterable {
        /// The content.
        case content
        /// The cover image.
        case cover
    }

    /// Where to download from (`url`); a plain path becomes a file URL relative to the configuration.
    ///
    /// Kept as text (``urlString``) and parsed when read: a parsed URL is about 270 bytes more
    /// per asset, 26 MiB for a configuration of 100,000 assets.
    public var url: URL {
        get { unusualURL ?? URL(string: urlString) ?? URL(fileURLWithPath: urlString) }
        set {
            urlString = newValue.absoluteString
            // A URL its own text does not give back is kept as it is.
            unusualURL = URL(string: urlString) == newValue ? nil : newValue
        }
    }
    /// ``url`` as text: its `absoluteString`.
    public private(set) var urlString: String
    private var unusualURL: URL?
    /// The expected SHA-256 in lowercase hexadecimal (`sha256`), if any.
    public var sha256: String?
    /// Where to put the file inside the folder (`path`), relative, without `..`.
    ///
    /// Defaults to the last path component of ``url``.
    public var path: String
    /// How to unpack the file (`unpack`); `nil` keeps it as is.
    public var unpack: Unpack?
    /// The asset's role (`role`), `content` by default.
    public var role: Role
    /// The download priority, higher first (`priority`), default 0.
    public var priority: Int
    /// The interface classes this asset may use (`allowed_networks`); `nil` follows `[network]`.
    public var allowedNetworks: Set<NetworkSettings.InterfaceClass>?
    /// Whether metered networks may be used (`allow_expensive`); `nil` follows `[network]`.
    public var allowExpensive: Bool?
    /// Whether constrained networks may be used (`allow_constrained`); `nil` follows `[network]`.
    public var allowConstrained: Bool?
    /// Transport options (`options`), passed to the transport unchanged (``TransportOptions``).
    public var options: [String: String]
    /// The file's chunk index (`index = "URL"`, or `indexed = true` alone for ``url`` + `.pbidx`);
    /// `nil` fetches the file whole (docs/ChunkIndex.md).
    public var index: URL?

    /// Other URLs serving the same bytes (`mirrors`), read as ``url`` is; the HTTP transport
    /// fetches pieces from them at once when `[scheduler] connections_per_asset` is above 1.
    public var mirrors: [URL] = []
    /// The line of the `[[issues.assets]]` header, if known.
    public var line: Int?

    /// Creates an asset entry.
    public init(
        url: URL,
        sha256: String? = nil,
        path: String,
        unpack: Unpack? = nil,
        role: Role = .content,
        priority: Int = 0,
        allowedNetworks: Set<NetworkSettings.InterfaceClass>? = nil,
        allowExpensive: Bool? = nil,
        allowConstrained: Bool? = nil,
        options: [String: String] = [:],
        line: Int? = nil
    ) {
        urlString = url.absoluteString
        unusualURL = URL(string: urlString) == url ? nil : url
        self.sha256 = sha256
        self.path = path
        self.unpack = unpack
        self.role = role
        self.priority = priority
        self.allowedNetworks = allowedNetworks
        self.allowExpensive = allowExpensive
        self.allowConstrained = allowConstrained
        self.options = options
        self.line = line
    }
}
