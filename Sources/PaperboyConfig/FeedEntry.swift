import Foundation

/// A `[[feeds]]` entry: a publisher catalog (JSON) to fetch issues from.
public struct FeedEntry: Sendable, Equatable {
    /// The feed's unique name (`name`).
    public var name: String
    /// The catalog's URL (`url`); a plain path becomes a file URL relative to the configuration.
    public var url: URL
    /// The line of the `[[feeds]]` header, if known.
    public var line: Int?

    /// Creates a feed entry.
    public init(name: String, url: URL, line: Int? = nil) {
        self.name = name
        self.url = url
        self.line = line
    }
}
