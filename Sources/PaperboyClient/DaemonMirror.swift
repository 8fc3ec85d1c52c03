import Foundation
import Paperboy
import PaperboyWire

/// What a daemon last reported, for the synchronous conveniences of a library opened through it
/// (``Library/issues``, ``AssetDownload/state``…): every reply and event that carries an issue,
/// an asset, the badge or the issue being read updates it; nothing reads the socket to answer.
///
/// It knows what this connection has seen: an issue or asset never listed, asked for or
/// announced is unknown (an asset's `state` then reads `.cancelled`, its `request` `nil`).
struct DaemonMirror {
    struct IssueEntry {
        var date: Date
        var contentPath: String
        var status: Issue.Status
        var isNew: Bool
        var coverPath: String?
    }

    struct AssetEntry {
        var issueName: String
        var status: AssetStatus?
        var userInfo: JSONValue?
        /// The last state an event announced while `status` was unknown (an asset of `ADDASSETS`
        /// whose transfer moved before the answer came).
        var announced: WireState?
        /// ``eventCount`` when the last event about the asset was applied (0: none was).
        var lastEvent = 0
    }

    var issues: [String: IssueEntry] = [:]
    var assets: [String: AssetEntry] = [:]
    /// Events applied so far (each known asset keeps the count at its last one,
    /// ``AssetEntry/lastEvent``): an answer to a request sent before an event about its asset may
    /// be older than that event (``record(_:since:)``).
    private(set) var eventCount = 0
    /// Each issue's assets in the order added, as last listed (and added since).
    var issueAssets: [String: [String]] = [:]
    var badge = 0
    var reading: String?

    // MARK: Updates

    mutating func record(_ issue: WireIssue) {
        issues[issue.name] = IssueEntry(date: issue.date, contentPath: issue.contentPath, status: Issue.Status(rawValue: issue.status) ?? .notDownloaded,
                                        isNew: issue.isNew, coverPath: issues[issue.name]?.coverPath)
        if let assets = issue.assets {
            issueAssets[issue.name] = assets.map(\.id)
            for asset in assets { record(asset) }
        }
    }

    mutating func record(_ issue: ShelfIssue) {
        issues[issue.name] = IssueEntry(date: issue.date, contentPath: issue.contentPath, status: Issue.Status(rawValue: issue.status) ?? .notDownloaded,
                                        isNew: issue.isNew, coverPath: issue.coverPath)
    }

    /// Records `asset` as an answer says it. With `since`, the events applied when its request
    /// was sent: if an event about the asset was applied after that, the answer may be older
    /// than the event (events are applied as they are read, answers when their requester
    /// resumes), so the state and bytes the event left are kept.
    mutating func record(_ asset: WireAsset, since: Int?) {
        guard let since, let entry = assets[asset.id], entry.lastEvent > since, let current = entry.status else {
            record(asset)
            return
        }
        record(asset)
        assets[asset.id]?.status?.state = current.state
        assets[asset.id]?.status?.failure = current.failure
        assets[asset.id]?.status?.totalBytesWritten = current.totalBytesWritten
        assets[asset.id]?.status?.expectedTotalBytes = current.expectedTotalBytes
    }

    mutating func record(_ asset: WireAsset) {
        let status = asset.request.map {
            AssetStatus(identifier: asset.id, request: $0, state: asset.state.state, totalBytesWritten: max(0, asset.totalBytesWritten),
                        expectedTotalBytes: asset.expectedTotalBytes.map { max(0, $0) }, attempts: max(0, asset.attempts),
                        failure: asset.state.failure, bytesReused: max(0, asset.bytesReused ?? 0), split: asset.split)
        }
        // Only answers about one asset carry its user info: a listing keeps what was known.
        let userInfo = asset.userInfo ?? assets[asset.id]?.userInfo
        assets[asset.id] = AssetEntry(issueName: asset.issue, status: status, userInfo: userInfo, announced: nil,
                                      lastEvent: assets[asset.id]?.lastEvent ?? 0)
        if !(issueAssets[asset.issue]?.contains(asset.id) ?? true) { issueAssets[asset.issue]?.append(asset.id) }
    }

    /// An asset `ADDASSETS` added: `request` (validated) and `userInfo` as sent, in the state the
    /// daemon wrote it (`queued` when downloading, else `idle`) or the one an event announced since.
    mutating func recordAdded(_ id: String, issue: String, request: AssetRequest, userInfo: JSONValue?, downloading: Bool) {
        let state = assets[id]?.announced ?? WireState(downloading ? .waiting(.queued) : .idle)
        record(WireAsset(id: id, issue: issue, request: WireAsset.shown(request), userInfo: userInfo, state: state,
                         totalBytesWritten: 0, expectedTotalBytes: nil, attempts: 0))
    }

    /// The assets of `issue` as one complete listing (``DaemonBackend/assets(ofIssue:)``).
    mutating func recordListing(_ assets: [WireAsset], ofIssue issue: String) {
        for asset in assets { record(asset) }
        issueAssets[issue] = assets.map(\.id)
        recount(issue)
    }

    mutating func removeIssue(_ name: String) {
        issues[name] = nil
        for id in issueAssets.removeValue(forKey: name) ?? [] { assets[id] = nil }
        assets = assets.filter { $0.value.issueName != name }
        if reading == name { reading = nil }
    }

    mutating func apply(_ event: Event) {
        eventCount += 1
        // Counted for known assets only (a `state` with its issue makes one known, below): an
        // event about another is not kept, whatever a daemon sends.
        defer { if let asset = event.asset { assets[asset]?.lastEvent = eventCount } }
        switch event {
        case .progress(let asset, _, let total, let expected):
            assets[asset]?.status?.totalBytesWritten = max(0, total)
            if let expected { assets[asset]?.status?.expectedTotalBytes = max(0, expected) }
        case .resumed(let asset, _, let total, let expected):
            assets[asset]?.status?.totalBytesWritten = max(0, total)
            if let expected { assets[asset]?.status?.expectedTotalBytes = max(0, expected) }
        case .state(let asset, let issue, let wire):
            if assets[asset] == nil, let issue { assets[asset] = AssetEntry(issueName: issue) }
            if assets[asset]?.status == nil { assets[asset]?.announced = wire }
            assets[asset]?.status?.state = wire.state
            assets[asset]?.status?.failure = wire.failure
            if case .cancelled = wire.state { assets[asset]?.status?.totalBytesWritten = 0 }
            if let name = issue ?? assets[asset]?.issueName { recount(name) }
        case .issueAvailable(let issue):
            issues[issue]?.status = .available
            issues[issue]?.isNew = true
        case .badge(let badge):
            self.badge = max(0, badge)
        case .finished, .failed:
            break
        }
    }

    // MARK: Reads

    func issue(named name: String, backend: DaemonBackend) -> Issue? {
        issues[name].map { Issue(name: name, date: $0.date, contentURL: URL(fileURLWithPath: $0.contentPath, isDirectory: true), backend: backend) }
    }

    /// Every known issue, newest first (as the library orders them: date, then name, descending).
    func allIssues(backend: DaemonBackend) -> [Issue] {
        issues.keys.sorted { lhs, rhs in
            let (left, right) = (issues[lhs]!.date, issues[rhs]!.date)
            return left != right ? left > right : lhs > rhs
        }.compactMap { issue(named: $0, backend: backend) }
    }

    /// The known assets of `issue`, in the order added when a listing said it.
    func assetIDs(ofIssue issue: String) -> [String] {
        issueAssets[issue] ?? assets.filter { $0.value.issueName == issue }.keys.sorted()
    }

    /// The issue's status: as last reported, or as the states of its listed assets make it since.
    func status(ofIssue name: String) -> Issue.Status {
        issues[name]?.status ?? .notDownloaded
    }

    /// Decides the issue's status from its listed assets' states (when a listing is known).
    private mutating func recount(_ issue: String) {
        guard issueAssets[issue] != nil, issues[issue] != nil else { return }
        let status = counts(ofIssue: issue).issueStatus
        issues[issue]?.status = status
    }

    func counts(ofIssue name: String) -> AssetCounts {
        var counts = AssetCounts()
        for id in assetIDs(ofIssue: name) {
            if let status = assets[id]?.status { counts.count(status) }
        }
        return counts
    }
}

extension DaemonMirror.AssetEntry {
    init(issueName: String) {
        self.init(issueName: issueName, status: nil, userInfo: nil, announced: nil)
    }
}
