import Foundation
import Paperboy

// `NOTIFY`: a content-available trigger sent to the daemon (docs/Daemon.md, "Feeds").

extension DaemonProtocol.Kind {
    /// Refresh the feeds now, as a push with content-available does (throttled).
    public static let notify = "NOTIFY"
}

extension DaemonProtocol.ErrorCode {
    /// `NOTIFY` names a feed the daemon's configuration does not have.
    public static let feedNotFound = "feed-not-found"
}

/// `NOTIFY`, client → daemon.
package struct NotifyRequest: Codable, Sendable {
    package var id: Int64
    /// The one feed to refresh; `nil`: every feed.
    package var feed: String?
    /// The push payload: the trigger counts only when it says `"content-available": 1` (at the
    /// top level or under `aps`). `nil`: unconditional.
    package var payload: JSONValue?

    package init(id: Int64, feed: String? = nil, payload: JSONValue? = nil) {
        self.id = id
        self.feed = feed
        self.payload = payload
    }
}

/// The `OK` answering `NOTIFY`, sent once the catalogs are read and their new issues added
/// (their downloads go on in the daemon).
package struct NotifyReply: Codable, Sendable {
    /// What the trigger did.
    package enum Result: String, Codable, Sendable {
        /// The feeds were refreshed.
        case refreshed
        /// Within `[notifications] throttle` of the last refresh: nothing done.
        case throttled
        /// The payload does not say content-available: nothing done.
        case ignored
    }

    package var id: Int64
    package var result: Result
    /// For `throttled`: when the next trigger will be honoured.
    package var nextAllowed: Date?
    /// For `refreshed`: the feeds read (in configuration order).
    package var feeds: [String]?
    /// For `refreshed`: the issues the catalogs added to the library.
    package var newIssues: [String]?
    /// For `refreshed`: one message per feed or issue that could not be used (the feed's name
    /// and why); the other feeds still count.
    package var failures: [String]?

    package init(id: Int64, result: Result) {
        self.id = id
        self.result = result
    }
}
