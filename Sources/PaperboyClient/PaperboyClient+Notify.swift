import Foundation
import Paperboy
import PaperboyWire

extension PaperboyClient {
    /// A push with `content-available: 1` arrived: the daemon refreshes its feeds now (or only
    /// `feed`), throttled by its `[notifications]` settings, as ``Library/contentAvailable(payload:throttle:dontThrottle:now:)``
    /// says in-process; the new issues download in the daemon.
    ///
    /// Returns once the catalogs are read: `.refresh` when they were, `.throttled` or `.ignored`
    /// when nothing was done.
    ///
    /// - Parameters:
    ///   - payload: the push's JSON; `nil` for an unconditional trigger.
    ///   - feed: one feed of the daemon's configuration, or `nil` for all.
    /// - Throws: ``LibraryError`` (code `feed-not-found` for an unknown feed).
    public func contentAvailable(payload: JSONValue? = nil, feed: String? = nil) async throws(LibraryError) -> ContentAvailableResult {
        let reply = try await notify(payload: payload, feed: feed)
        switch reply.result {
        case .refreshed: return .refresh
        case .throttled: return .throttled(nextAllowed: reply.nextAllowed ?? Date())
        case .ignored: return .ignored
        }
    }

    /// `NOTIFY`, with everything the daemon answered (the feeds read, new issues, failures).
    package func notify(payload: JSONValue?, feed: String?) async throws(LibraryError) -> NotifyReply {
        // The in-process library's check, so that both refuse the same payloads with the same error.
        if let payload { try Library.checkPushPayload(payload) }
        return try await connection.request(as: NotifyReply.self) { .notify(NotifyRequest(id: $0, feed: feed, payload: payload)) }
    }
}
