import Foundation

/// An `[[issues]]` entry: an issue with its assets, declared in the configuration.
public struct IssueEntry: Sendable, Equatable {
    /// The issue's unique name (`name`).
    public var name: String
    /// The issue's date (`date`): midnight UTC for a plain date.
    public var date: Date
    /// The issue's assets (`[[issues.assets]]`), in file order.
    public var assets: [AssetEntry]
    /// The line of the `[[issues]]` header, if known.
    public var line: Int?

    /// Creates an issue entry.
    public init(name: String, date: Date, assets: [AssetEntry] = [], line: Int? = nil) {
        self.name = name
        self.date = date
        self.assets = assets
        self.line = line
    }
}
