import Foundation
import Paperboy

// The payloads of the library requests `paperboy issues`, `status`, `read` and `purge` send
// (docs/Daemon.md, "Library requests"); field names are snake_case on the wire.

extension DaemonProtocol.Kind {
    /// The shelf: issues with their aggregate status, a page at a time.
    public static let shelf = "SHELF"
    /// One issue's assets, a page at a time.
    public static let assets = "ASSETS"
    /// One issue's assets' states alone, a page at a time (what a settle reads).
    public static let states = "STATES"
    /// Set (or clear) the currently-reading issue.
    public static let read = "READ"
    /// Remove the oldest available issues.
    public static let purge = "PURGE"
    /// Every issue's assets counted by state, a page of issues at a time (`Library.counts()`).
    public static let counts = "COUNTS"
    /// What the library is doing now (`Library.activity()`).
    public static let activity = "ACTIVITY"
}

/// `COUNTS`: the counts of the issues from `offset`, a page of the shelf as `SHELF` asks it.
package typealias CountsRequest = ShelfRequest

/// One issue's counts in a `COUNTS` page.
package struct IssueCounts: Codable, Sendable, Hashable {
    package var name: String
    package var counts: AssetCounts

    package init(name: String, counts: AssetCounts) {
        self.name = name
        self.counts = counts
    }
}

/// `OK` to `COUNTS`: the issues of the page that hold assets, in the shelf's order, and where
/// the next page starts (absent after the last). The counts come from one aggregate query of the
/// daemon's store, as in process: no asset is listed.
package struct CountsReply: Codable, Sendable {
    package var id: Int64
    package var issues: [IssueCounts]
    package var nextOffset: Int?

    package init(id: Int64, issues: [IssueCounts], nextOffset: Int? = nil) {
        self.id = id
        self.issues = issues
        self.nextOffset = nextOffset
    }
}

/// `OK` to `ACTIVITY`: the daemon's `Library.activity()`.
package struct ActivityReply: Codable, Sendable {
    package var id: Int64
    package var activity: LibraryActivity

    package init(id: Int64, activity: LibraryActivity) {
        self.id = id
        self.activity = activity
    }
}

/// `SHELF`: issues from `offset` (0 for the first page).
package struct ShelfRequest: Codable, Sendable {
    package var id: Int64
    package var offset: Int?

    package init(id: Int64, offset: Int? = nil) {
        self.id = id
        self.offset = offset
    }
}

/// One issue of a `SHELF` page: the shelf's own entry, as it travels (one type both ways).
package typealias ShelfIssue = LibraryShelf.Entry

/// `OK` to `SHELF`.
package struct ShelfReply: Codable, Sendable {
    package var id: Int64
    package var libraryPath: String
    package var badge: Int
    /// The currently-reading issue's name.
    package var reading: String?
    /// The limiter statistics the daemon last recorded (as `paperboy status` shows them).
    package var bandwidth: BandwidthLimiter.Statistics?
    package var issues: [ShelfIssue]
    /// Where the next page starts; absent after the last.
    package var nextOffset: Int?
    /// On the first page: the library's rows that cannot be read (``Library/damagedRows``), at
    /// most 100 of them (the daemon's limit); absent when there are none.
    package var damagedRows: [WireDamagedRow]?
    /// On the first page: the network the daemon's scheduler works with, as text (``NetworkStatus/description``).
    package var network: String?

    package init(id: Int64, libraryPath: String, badge: Int, reading: String?, bandwidth: BandwidthLimiter.Statistics?,
                 issues: [ShelfIssue], nextOffset: Int? = nil, damagedRows: [WireDamagedRow]? = nil, network: String? = nil) {
        self.id = id
        self.libraryPath = libraryPath
        self.badge = badge
        self.reading = reading
        self.bandwidth = bandwidth
        self.issues = issues
        self.nextOffset = nextOffset
        self.damagedRows = damagedRows
        self.network = network
    }
}

/// A ``DamagedRow`` on the wire.
package struct WireDamagedRow: Codable, Sendable {
    package var table: String
    package var key: String
    package var column: String
    package var value: String
    package var removal: String
    package var database: String

    package init(_ row: DamagedRow) {
        table = row.table.rawValue
        key = row.key
        column = row.column
        value = row.value
        removal = row.removal
        database = row.databasePath
    }

    /// The row, or `nil` for a table this version does not know.
    package var row: DamagedRow? {
        DamagedRow.Table(rawValue: table).map {
            DamagedRow(table: $0, key: key, column: column, value: value, removal: removal, databasePath: database)
        }
    }
}

/// `ASSETS`: a page of one issue's assets, after the cursor of the previous page.
package struct AssetsRequest: Codable, Sendable {
    package var id: Int64
    package var issue: String
    package var after: String?

    package init(id: Int64, issue: String, after: String? = nil) {
        self.id = id
        self.issue = issue
        self.after = after
    }
}

/// `STATES`: the states of the issue's assets, after the `next` of the previous page (absent
/// for the first): the fields of `ASSETS`.
package typealias StatesRequest = AssetsRequest

/// One asset's state in a `STATES` page.
package struct WireAssetState: Codable, Sendable, Equatable {
    package var asset: String
    package var state: WireState

    package init(asset: String, state: WireState) {
        self.asset = asset
        self.state = state
    }
}

/// `OK` to `STATES`: each asset's identifier and state, in the order they were added, and where
/// the next page starts (absent after the last). A settle through a daemon reads these instead of
/// whole assets (requests included): a few dozen bytes per asset instead of several hundred.
package struct StatesReply: Codable, Sendable {
    package var id: Int64
    package var states: [WireAssetState]
    /// The `after` of the next page; absent after the last.
    package var next: String?

    package init(id: Int64, states: [WireAssetState], next: String?) {
        self.id = id
        self.states = states
        self.next = next
    }
}

/// `OK` to `ASSETS`.
package struct AssetsReply: Codable, Sendable {
    package var id: Int64
    package var assets: [WireAsset]
    /// The `after` of the next page; absent after the last.
    package var next: String?

    package init(id: Int64, assets: [WireAsset], next: String?) {
        self.id = id
        self.assets = assets
        self.next = next
    }
}

/// `READ`: `issue` becomes the currently-reading issue and is marked read (unless `mark_read`
/// is false); no `issue` clears it.
package struct ReadRequest: Codable, Sendable {
    package var id: Int64
    package var issue: String?
    /// Whether the issue is also marked read; absent: true.
    package var markRead: Bool?

    package init(id: Int64, issue: String?, markRead: Bool? = nil) {
        self.id = id
        self.issue = issue
        self.markRead = markRead
    }
}

/// `PURGE`: as `Library.purge(keep:budgetBytes:)`.
package struct PurgeRequest: Codable, Sendable {
    package var id: Int64
    package var keep: Int?
    package var budgetBytes: Int64?

    package init(id: Int64, keep: Int?, budgetBytes: Int64?) {
        self.id = id
        self.keep = keep
        self.budgetBytes = budgetBytes
    }
}

extension Issue.PageCursor {
    /// The cursor as `ASSETS` carries it: `SEQ:ID`.
    package var token: String { "\(seq):\(id)" }

    package init?(token: String) {
        guard let colon = token.firstIndex(of: ":"), let seq = Int64(token[..<colon]) else { return nil }
        self.init(seq: seq, id: String(token[token.index(after: colon)...]))
    }
}
