import Foundation
import Paperboy
import PaperboyWire

/// The operations of ``LibraryBackend``, each one or more requests of docs/Daemon.md; every
/// answer updates the mirror.
extension DaemonBackend {
    // MARK: Library

    package func issues() async throws(LibraryError) -> [Issue] {
        let shelf = try await shelf()
        return shelf.issues.map { Issue(name: $0.name, date: $0.date, contentURL: URL(fileURLWithPath: $0.contentPath, isDirectory: true), backend: self) }
    }

    package func issue(named name: String) async throws(LibraryError) -> Issue? {
        do throws(LibraryError) {
            let reply = try await connection.request(as: StatusReply.self) { .status(StatusRequest(id: $0, issue: name, assets: false)) }
            guard case .issue(let issue) = reply.subject else { throw Self.unexpected(reply, "STATUS") }
            return record(issue, badge: reply.badge)
        } catch where error.code == .issueNotFound {
            mirror.withLock { $0.removeIssue(name) }
            return nil
        }
    }

    package func addIssue(name: String, date: Date) async throws(LibraryError) -> Issue {
        let reply = try await connection.request(as: IssueReply.self) { .addIssue(AddIssueRequest(id: $0, name: name, date: date)) }
        return record(reply.issue)
    }

    package func removeIssue(named name: String) async throws(LibraryError) {
        _ = try await connection.request(as: EmptyReply.self) { .remove(IssueCommand(id: $0, issue: name)) }
        mirror.withLock { $0.removeIssue(name) }
    }

    package func currentlyReadingIssue() async throws(LibraryError) -> Issue? {
        guard let name = try await shelfPage(offset: 0).reading else { return nil }
        return try await issue(named: name)
    }

    package func setCurrentlyReadingIssue(named name: String?) async throws(LibraryError) {
        let reply = try await connection.request(as: ReadReply.self) { .read(ReadRequest(id: $0, issue: name, markRead: false)) }
        if let issue = reply.issue { _ = record(issue) }
        mirror.withLock { $0.reading = name }
    }

    package func badgeCount() async throws(LibraryError) -> Int {
        let reply = try await connection.request(as: StatusReply.self) { .status(StatusRequest(id: $0, issue: nil, assets: false)) }
        if case .issues(let issues) = reply.subject { mirror.withLock { for issue in issues { $0.record(issue) } } }
        mirror.withLock { $0.badge = max(0, reply.badge) }
        return max(0, reply.badge)
    }

    /// Read an issue at a time from `ASSETS` pages, as ``activity()`` is: one `STATUS` with
    /// every asset would outgrow a frame in a large library.
    package func downloadingAssets() async throws(LibraryError) -> [AssetDownload] {
        var active: [AssetDownload] = []
        for name in try await shelf().issues.map(\.name) {
            try await forEachAsset(ofIssue: name) { asset in
                guard asset.state.state.isActive else { return }
                mirror.withLock { $0.record(asset) }
                active.append(handle(asset.id, issue: name))
            }
        }
        return active
    }

    package func asset(identifier: String) async throws(LibraryError) -> AssetDownload? {
        do {
            _ = try await status(ofAsset: identifier)
            return handle(identifier)
        } catch where error.code == .assetNotFound {
            return nil
        }
    }

    package func activity() async throws(LibraryError) -> LibraryActivity {
        try await newerOrOlder(DaemonProtocol.Kind.activity) { () async throws(LibraryError) in
            try await connection.request(as: ActivityReply.self) { .activity(PlainRequest(id: $0)) }.activity
        } older: { () async throws(LibraryError) in
            // A daemon older than `ACTIVITY` (0.1.0): every asset listed and counted here.
            var activity = LibraryActivity()
            for name in try await shelf().issues.map(\.name) {
                for asset in try await listAssets(ofIssue: name) { activity.count(asset) }
            }
            return activity
        }
    }

    package func counts() async throws(LibraryError) -> [String: AssetCounts] {
        try await newerOrOlder(DaemonProtocol.Kind.counts) { () async throws(LibraryError) in
            // A refusal (of any page) starts over below: what was counted here is dropped.
            var counts: [String: AssetCounts] = [:]
            var offset: Int? = 0
            while let from = offset {
                let page = try await connection.request(as: CountsReply.self) { .counts(CountsRequest(id: $0, offset: from)) }
                for issue in page.issues { counts[issue.name] = issue.counts }
                offset = page.nextOffset.flatMap { $0 > from ? $0 : nil }
            }
            return counts
        } older: { () async throws(LibraryError) in
            // A daemon older than `COUNTS` (0.1.0): every asset listed and counted here.
            var counts: [String: AssetCounts] = [:]
            for name in try await shelf().issues.map(\.name) {
                let assets = try await listAssets(ofIssue: name)
                guard !assets.isEmpty else { continue }
                var issueCounts = AssetCounts()
                for asset in assets { issueCounts.count(asset) }
                counts[name] = issueCounts
            }
            return counts
        }
    }

    /// The code of a daemon's `ERROR` to a kind it does not know.
    static let unknownKind = LibraryError.Code(DaemonProtocol.ErrorCode.unknownKind)

    package func purge(keep: Int?, budgetBytes: Int64?) async throws(LibraryError) -> [String] {
        let removed = try await connection.request(as: PurgeReply.self) {
            .purge(PurgeRequest(id: $0, keep: keep, budgetBytes: budgetBytes))
        }.removed
        mirror.withLock { mirror in for name in removed { mirror.removeIssue(name) } }
        return removed
    }

    /// `NOTIFY` with `payload`: the daemon refreshes its feeds, throttled by its own
    /// `[notifications]` settings (`throttle`, `dontThrottle` and `now` are the daemon's).
    package func contentAvailable(payload: JSONValue?, throttle: Duration, dontThrottle: Bool, now: Date?) async throws(LibraryError)
        -> ContentAvailableResult {
        let reply = try await notify(payload: payload, feed: nil)
        switch reply.result {
        case .refreshed: return .refresh
        case .throttled: return .throttled(nextAllowed: reply.nextAllowed ?? clock.now)
        case .ignored: return .ignored
        }
    }

    package func close() async {
        disconnect()
    }

    // MARK: Issue

    package func assets(ofIssue name: String) async throws(LibraryError) -> [AssetDownload] {
        try await listAssets(ofIssue: name).map { handle($0.identifier, issue: name) }
    }

    /// Every request checked as in process first, then added by `ADDASSETS` in chunks that each
    /// fit a frame (``AddAssetsRequest/chunks(_:)``): atomic per chunk, so a refusal by the daemon
    /// leaves the chunks added before it. Downloading, the daemon delivers them (unclaimed).
    package func addAssets(_ requests: [(AssetRequest, JSONValue?)], toIssue name: String, downloading: Bool) async throws(LibraryError)
        -> [AssetDownload] {
        var validated: [AssetRequest] = []
        validated.reserveCapacity(requests.count)
        for (request, userInfo) in requests {
            validated.append(try request.validated())
            // The in-process check of the value (the daemon checks its size against its own
            // `maxUserInfoBytes`), so that a value too deep for a frame gets the same error.
            _ = try userInfo?.userInfoJSON(for: request.url, maxBytes: DaemonProtocol.maxPayloadLength)
        }
        var added: [AssetDownload] = []
        added.reserveCapacity(requests.count)
        for chunk in AddAssetsRequest.chunks(requests.map { NewAsset(request: $0.0, userInfo: $0.1) }) {
            let reply = try await connection.request(as: AddAssetsReply.self) {
                .addAssets(AddAssetsRequest(id: $0, issue: name, assets: Array(chunk), download: downloading ? true : nil))
            }
            guard reply.assets.count == chunk.count else {
                throw LibraryError(.transport, "the daemon answered ADDASSETS \(reply.id) with \(reply.assets.count) assets for \(chunk.count)")
            }
            mirror.withLock { mirror in
                for (id, index) in zip(reply.assets, chunk.indices) {
                    mirror.recordAdded(id, issue: name, request: validated[index], userInfo: requests[index].1, downloading: downloading)
                }
            }
            added += reply.assets.map { handle($0, issue: name) }
        }
        return added
    }

    package func markRead(issue name: String) async throws(LibraryError) {
        let reply = try await connection.request(as: IssueReply.self) { .markRead(IssueCommand(id: $0, issue: name)) }
        _ = record(reply.issue)
    }

    package func status(ofIssue name: String) async throws(LibraryError) -> Issue.Status {
        Issue.Status(rawValue: try await issueObject(name).status) ?? .notDownloaded
    }

    package func isNew(issue name: String) async throws(LibraryError) -> Bool {
        try await issueObject(name).isNew
    }

    package func waitUntilAvailable(issue name: String) async throws(CancellationError) -> IssueOutcome {
        let reply: WaitReply
        do {
            reply = try await connection.cancellableRequest(as: WaitReply.self) { .wait(WaitRequest(id: $0, issue: name)) }
        } catch let error as CancellationError {
            throw error
        } catch {
            // The daemon went away (or the issue did): each asset known ends as `.closed`.
            let assets = mirror.withLock { $0.assetIDs(ofIssue: name) }
            return .incomplete(Dictionary(uniqueKeysWithValues: assets.map { (handle($0, issue: name), AssetOutcome.closed) }))
        }
        if reply.outcome == "available" { return .available }
        return .incomplete(Dictionary((reply.missing ?? []).map { (handle($0.asset ?? "", issue: name), $0.assetOutcome) }) { first, _ in first })
    }

    // MARK: Asset

    package func status(ofAsset identifier: String) async throws(LibraryError) -> AssetStatus {
        let since = eventsApplied
        let reply = try await connection.request(as: StatusReply.self) { .status(StatusRequest(id: $0, asset: identifier)) }
        guard case .asset(let wire) = reply.subject else { throw Self.unexpected(reply, "STATUS") }
        record(wire, since: since)
        guard let status = mirror.withLock({ $0.assets[identifier]?.status }) else {
            throw LibraryError(.assetNotFound, "asset \(identifier) is not in the library")
        }
        return status
    }

    package func download(_ asset: AssetDownload, delegate: (any AssetDownloadDelegate)?) async throws(LibraryError) {
        try await attach(delegate, to: asset)
    }

    package func pause(asset identifier: String) async throws(LibraryError) {
        let since = eventsApplied
        record(try await connection.request(as: AssetReply.self) { .pause(AssetCommand(id: $0, asset: identifier)) }.asset, since: since)
    }

    package func resume(asset identifier: String) async throws(LibraryError) {
        do {
            let since = eventsApplied
            record(try await connection.request(as: AssetReply.self) { .resume(AssetCommand(id: $0, asset: identifier)) }.asset, since: since)
        } catch where error.code == .assetNotFound {
            // As in process: an asset no longer in the library is left alone.
        }
    }

    package func cancel(asset identifier: String) async throws(LibraryError) {
        let since = eventsApplied
        record(try await connection.request(as: AssetReply.self) { .cancel(AssetCommand(id: $0, asset: identifier)) }.asset, since: since)
    }

    package func events(of asset: AssetDownload) async throws(LibraryError) -> DownloadEvents {
        nonisolated(unsafe) var attached: (any AssetDownloadDelegate)?
        let events = DownloadEvents.attached { attached = $0 }
        try await attach(attached, to: asset)
        return events
    }

    package func waitUntilFinished(asset identifier: String) async throws(CancellationError) -> AssetOutcome {
        do {
            return try await connection.cancellableRequest(as: WaitReply.self) { .wait(WaitRequest(id: $0, asset: identifier)) }.assetOutcome
        } catch let error as CancellationError {
            throw error
        } catch let error as LibraryError where error.code == .assetNotFound {
            return .cancelled
        } catch {
            return .closed
        }
    }

    package func updateExpectedSHA256(_ sha256: String?, ofAsset identifier: String) async throws(LibraryError) {
        let since = eventsApplied
        record(try await connection.request(as: AssetReply.self) { .checksum(ChecksumRequest(id: $0, asset: identifier, sha256: sha256)) }.asset, since: since)
    }

    // MARK: Helpers

    /// Every asset of the issue, a page of `ASSETS` at a time, recorded as its listing.
    func listAssets(ofIssue name: String) async throws(LibraryError) -> [AssetStatus] {
        var all: [WireAsset] = []
        try await forEachAsset(ofIssue: name) { all.append($0) }
        mirror.withLock { $0.recordListing(all, ofIssue: name) }
        return mirror.withLock { mirror in all.compactMap { mirror.assets[$0.id]?.status } }
    }

    /// The issue object of `name` (`issue-not-found` when there is none).
    private func issueObject(_ name: String) async throws(LibraryError) -> WireIssue {
        let reply = try await connection.request(as: StatusReply.self) { .status(StatusRequest(id: $0, issue: name, assets: false)) }
        guard case .issue(let issue) = reply.subject else { throw Self.unexpected(reply, "STATUS") }
        _ = record(issue, badge: reply.badge)
        return issue
    }

    /// Records `issue` in the mirror and returns its handle.
    @discardableResult
    func record(_ issue: WireIssue, badge: Int? = nil) -> Issue {
        mirror.withLock { mirror in
            mirror.record(issue)
            if let badge { mirror.badge = max(0, badge) }
        }
        return Issue(name: issue.name, date: issue.date, contentURL: URL(fileURLWithPath: issue.contentPath, isDirectory: true), backend: self)
    }

    /// Records `asset` from an answer to a request sent when `since` events had been applied
    /// (``eventsApplied``, read before sending): an event about it applied since wins.
    func record(_ asset: WireAsset, since: Int) {
        mirror.withLock { $0.record(asset, since: since) }
    }

    /// Events applied to the mirror so far: read before sending a request whose answer is recorded.
    var eventsApplied: Int { mirror.withLock { $0.eventCount } }

    /// A `STATUS` answered with another subject than the one asked.
    static func unexpected(_ reply: StatusReply, _ kind: String) -> LibraryError {
        LibraryError(.transport, "the daemon answered \(kind) \(reply.id) about something else than what was asked")
    }
}
