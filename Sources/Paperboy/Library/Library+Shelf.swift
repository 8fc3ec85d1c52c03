import Foundation

/// What ``Library/contentAvailable(payload:throttle:dontThrottle:now:)`` decided.
public enum ContentAvailableResult: Sendable, Hashable {
    /// Refresh now: the trigger was recorded.
    case refresh
    /// Too soon after the previous refresh; the next one is allowed at this date.
    case throttled(nextAllowed: Date)
    /// The payload does not say `content-available: 1`.
    case ignored
}

extension Library {
    /// A push with `content-available: 1` arrived (the NewsstandKit trigger): says whether to
    /// refresh feeds now, at most once per `throttle` (24 hours by default) unless `dontThrottle`
    /// (the analog of NKDontThrottleNewsstandContentNotifications). The time of the last refresh
    /// is kept in the library, so the throttle survives restarts. Through a daemon, the daemon
    /// refreshes its own feeds (`NOTIFY`) under its own `[notifications]` settings: `throttle`,
    /// `dontThrottle` and `now` are its, not these.
    ///
    /// - Parameters:
    ///   - payload: the push payload; `content-available` may be at the top level or under `aps`.
    ///     `nil` counts as a trigger (a manual `paperboy notify`).
    ///   - throttle: the shortest time between two refreshes.
    ///   - dontThrottle: refresh now, however recent the last refresh.
    ///   - now: the time of the push; by default the library's clock's.
    /// - Throws: ``LibraryError`` `.invalidRequest` for a payload out of the push payload's JSON
    ///   limits (32 levels, 64 KiB: docs/Security.md), or when the decision cannot be recorded.
    public func contentAvailable(payload: JSONValue? = nil, throttle: Duration = .seconds(86_400),
                                 dontThrottle: Bool = false, now: Date? = nil) async throws(LibraryError) -> ContentAvailableResult {
        try await backend.contentAvailable(payload: payload, throttle: throttle, dontThrottle: dontThrottle, now: now)
    }

    /// When ``contentAvailable(payload:throttle:dontThrottle:now:)`` last said to refresh; `nil`
    /// through a daemon (which keeps its own).
    public var lastContentRefresh: Date? { local?.lastContentRefresh }

    /// Refuses a push payload out of ``JSONReader/pushPayload``'s limits, in-process and before a
    /// client sends it to a daemon alike.
    ///
    /// - Throws: ``LibraryError`` `.invalidRequest` naming the door and the limit.
    package static func checkPushPayload(_ payload: JSONValue) throws(LibraryError) {
        do {
            _ = try payload.checkedJSON(at: .pushPayload)
        } catch {
            throw LibraryError(.invalidRequest, error.description)
        }
    }

    static func saysContentAvailable(_ payload: JSONValue) -> Bool {
        guard case .object(let object) = payload else { return false }
        func isOne(_ value: JSONValue?) -> Bool {
            switch value {
            case .number(let number)?: number == 1
            case .bool(true)?: true
            case .string("1")?: true
            default: false
            }
        }
        if isOne(object["content-available"]) { return true }
        if case .object(let aps)? = object["aps"] { return isOne(aps["content-available"]) }
        return false
    }

    /// Removes the oldest available issues (content and records), never the currently-reading
    /// one nor one with downloads on their way.
    ///
    /// - Parameters:
    ///   - keep: keep at most this many issues (newest first), if given.
    ///   - budgetBytes: then remove more until the issues' folders take at most this much
    ///     (a ``ByteCount``: 0 to 2^62).
    /// - Returns: the names of the removed issues, oldest first.
    /// - Throws: ``LibraryError`` `.invalidRequest` naming the value when `budgetBytes` is out of range.
    @discardableResult
    public func purge(keep: Int? = nil, budgetBytes: Int64? = nil) async throws(LibraryError) -> [String] {
        try await backend.purge(keep: keep, budgetBytes: budgetBytes)
    }

    /// Bytes used by the files under `folder`.
    static func folderSize(_ folder: URL) -> Int64 {
        guard let enumerator = FileManager.default.enumerator(at: folder, includingPropertiesForKeys: [.fileSizeKey, .isRegularFileKey]) else { return 0 }
        var total: Int64 = 0
        for case let url as URL in enumerator {
            let values = try? url.resourceValues(forKeys: [.fileSizeKey, .isRegularFileKey])
            if values?.isRegularFile == true { total += Int64(values?.fileSize ?? 0) }
        }
        return total
    }
}
