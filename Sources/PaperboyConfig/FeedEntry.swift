import Foundation

/// A `[[feeds]]` entry: a publisher catalog (JSON) to fetch issues from.
public struct FeedEntry: Sendable, Equatable {
    /// The feed's unique name (`name`).
    public var name: String
    /// The catalog's URL (`url`); a plain path becomes a file URL relative to the configuration.
    public var url: URL
    /// The most assets the catalog may list, covers included (`max_assets`, default 10,000).
    public var maxAssets: Int
    /// URL schemes the catalog's assets may use besides `http`, `https` and the catalog's own
    /// origin (`allowed_schemes`, default none); see ``Catalog/Limits``.
    public var allowedSchemes: [String]
    /// How often `paperboy daemon` refreshes the feed on its own (`refresh`, from
    /// ``minimumRefresh`` to ``maximumRefresh``); `nil`: only when triggered (`notify`, `sync`).
    public var refresh: Duration?
    /// The line of the `[[feeds]]` header, if known.
    public var line: Int?

    /// Creates a feed entry.
    public init(
        name: String, url: URL, maxAssets: Int = Catalog.Limits.defaultMaxAssets, allowedSchemes: [String] = [],
        refresh: Duration? = nil, line: Int? = nil
    ) {
        self.name = name
        self.url = url
        self.maxAssets = maxAssets
        self.allowedSchemes = allowedSchemes
        self.refresh = refresh
        self.line = line
    }

    /// The shortest `refresh`: a catalog is a publisher's server, not a chat.
    public static let minimumRefresh = Duration.seconds(60)
    /// The longest `refresh` (30 days).
    public static let maximumRefresh = Duration.seconds(30 * 86_400)

    /// The limits ``Catalog/parse(_:feed:url:limits:)`` applies to this feed's catalog.
    public var limits: Catalog.Limits {
        Catalog.Limits(maxAssets: maxAssets, allowedSchemes: Set(allowedSchemes.map { $0.lowercased() }))
    }
}
