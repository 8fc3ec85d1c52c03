import Foundation
import Synchronization

/// The in-process ``LibraryBackend``: the library's own scheduler, store and folders.
///
/// An operation that never waits is synchronous here (a synchronous method meets an asynchronous
/// requirement), so that code of the package on threads of its own, the daemon's request
/// handlers, calls it as it is; one that cannot fail does not throw.
package final class LocalBackend: LibraryBackend {
    let scheduler: Scheduler

    /// Serves `scheduler`; the handles the scheduler makes (events, reconnections) hold this backend.
    init(scheduler: Scheduler) {
        self.scheduler = scheduler
        scheduler.adopt(self)
    }

    /// Serves `scheduler` whose backend went away while it still runs (see ``Scheduler/backend``).
    private init(orphaned scheduler: Scheduler) {
        self.scheduler = scheduler
    }

    static func orphaned(_ scheduler: Scheduler) -> LocalBackend { LocalBackend(orphaned: scheduler) }

    package var root: URL { scheduler.layout.root }

    var store: LibraryStore { scheduler.store }

    func issue(_ record: IssueRecord) -> Issue { Issue(record: record, backend: self) }

    func asset(_ identifier: String, issueName: String) -> AssetDownload {
        AssetDownload(identifier: identifier, issueName: issueName, backend: self)
    }

    // MARK: Library

    package func issues() -> [Issue] { lastKnownIssues() }

    package func issue(named name: String) -> Issue? { lastKnownIssue(named: name) }

    package func addIssue(name: String, date: Date) throws(LibraryError) -> Issue {
        let name = try IssueName(name, door: "issue name")
        let date = try LibraryDate(date, door: "addIssue(name:date:) '\(name)'")
        let record = IssueRecord(name: name, date: date, addedAt: scheduler.clock.now, isNew: false, coverPath: nil)
        try store.insertIssue(record)
        return issue(record)
    }

    package func removeIssue(named name: String) async throws(LibraryError) {
        let assets = store.assets(issueName: name)
        await scheduler.removeIssue(name)
        for asset in assets {
            POSIX.remove(scheduler.layout.partialURL(asset: asset.id))
            POSIX.remove(scheduler.layout.inboxURL(asset: asset.id, request: asset.request))
        }
        if store.meta("currentlyReadingIssue") == name { try store.setMeta("currentlyReadingIssue", nil) }
        try store.deleteIssue(named: name)
        try? FileManager.default.removeItem(at: scheduler.layout.contentURL(issue: name))
    }

    package func currentlyReadingIssue() -> Issue? { lastKnownCurrentlyReadingIssue() }

    package func setCurrentlyReadingIssue(named name: String?) throws(LibraryError) {
        try store.setMeta("currentlyReadingIssue", name)
    }

    package func badgeCount() -> Int { lastKnownBadgeCount() }

    package func downloadingAssets() -> [AssetDownload] { lastKnownDownloadingAssets() }

    package func asset(identifier: String) -> AssetDownload? {
        store.asset(id: identifier).map { asset($0.id, issueName: $0.issueName) }
    }

    package func events(where wants: (@Sendable (LibraryEvent) -> Bool)? = nil) -> AsyncStream<LibraryEvent> {
        scheduler.broadcaster.subscribe(where: wants)
    }

    package func activity() throws(LibraryError) -> LibraryActivity { try scheduler.activity() }

    package func counts() throws(LibraryError) -> [String: AssetCounts] { try store.assetCounts() }

    package func purge(keep: Int?, budgetBytes: Int64?) async throws(LibraryError) -> [String] {
        if let budgetBytes {
            do throws(BoundaryError) { _ = try ByteCount(budgetBytes, door: "purge(keep:budgetBytes:) budgetBytes") } catch { throw LibraryError(error) }
        }
        let reading = store.meta("currentlyReadingIssue")
        let all = lastKnownIssues()   // newest first
        var removable = all.reversed().filter { $0.name != reading && $0.status == .available }
        var removed: [String] = []
        if let keep {
            var excess = all.count - max(0, keep)
            while excess > 0, !removable.isEmpty {
                let issue = removable.removeFirst()
                try await removeIssue(named: issue.name)
                removed.append(issue.name)
                excess -= 1
            }
        }
        if let budgetBytes {
            var sizes = Dictionary(uniqueKeysWithValues: lastKnownIssues().map { ($0.name, Library.folderSize($0.contentURL)) })
            var total = sizes.values.reduce(0, +)
            while total > budgetBytes, !removable.isEmpty {
                let issue = removable.removeFirst()
                total -= sizes.removeValue(forKey: issue.name) ?? 0
                try await removeIssue(named: issue.name)
                removed.append(issue.name)
            }
        }
        return removed
    }

    package func contentAvailable(payload: JSONValue?, throttle: Duration, dontThrottle: Bool, now: Date?) throws(LibraryError)
        -> ContentAvailableResult {
        if let payload {
            try Library.checkPushPayload(payload)
            if !Library.saysContentAvailable(payload) { return .ignored }
        }
        let now = now ?? scheduler.clock.now
        if !dontThrottle, let last = lastContentRefresh {
            let next = last.addingTimeInterval(throttle.seconds)
            if now < next { return .throttled(nextAllowed: next) }
        }
        try store.setMeta("lastContentRefresh", String(now.timeIntervalSince1970))
        return .refresh
    }

    /// When ``contentAvailable(payload:throttle:dontThrottle:now:)`` last said to refresh.
    var lastContentRefresh: Date? {
        store.meta("lastContentRefresh").flatMap(Double.init).map { Date(timeIntervalSince1970: $0) }
    }

    package func close() async {
        await scheduler.close()
        scheduler.broadcaster.finish()
    }

    // MARK: Issue

    package func assets(ofIssue name: String) -> [AssetDownload] { lastKnownAssets(ofIssue: name) }

    package func addAssets(_ requests: [(AssetRequest, JSONValue?)], toIssue name: String, downloading: Bool) throws(LibraryError)
        -> [AssetDownload] {
        guard store.issue(named: name) != nil else {
            throw LibraryError(.issueNotFound, "issue '\(name)' is not in the library")
        }
        var seq = store.nextAssetSeq()
        var records: [AssetRecord] = []
        records.reserveCapacity(requests.count)
        for (request, userInfo) in requests {
            let request = try request.validated()
            let userInfoJSON = try userInfo?.userInfoJSON(for: request.url, maxBytes: scheduler.maxUserInfoBytes)
            records.append(AssetRecord(
                id: Issue.newAssetIdentifier(), issueName: name, seq: seq, request: request, userInfo: userInfoJSON,
                state: (downloading ? PersistedState.queued : .idle).rawValue, detail: nil, retryAt: nil, attempts: 0, bytesOnDisk: 0,
                expectedBytes: nil, validator: nil, validatorStrength: nil))
            seq += 1
        }
        try store.insertAssets(records)
        if downloading { scheduler.enqueue(records) }
        return records.map { asset($0.id, issueName: name) }
    }

    package func markRead(issue name: String) {
        store.updateIssue(named: name) { $0.isNew = false }
    }

    package func status(ofIssue name: String) throws(LibraryError) -> Issue.Status {
        try lastKnownCounts(ofIssue: name).issueStatus
    }

    package func isNew(issue name: String) -> Bool { lastKnownIsNew(issue: name) }

    package func waitUntilAvailable(issue name: String) async throws(CancellationError) -> IssueOutcome {
        let assets = lastKnownAssets(ofIssue: name)
        var missing: [AssetDownload: AssetOutcome] = [:]
        for asset in assets {
            let outcome = try await scheduler.waitUntilFinished(asset.identifier)
            if case .delivered = outcome { continue }
            missing[asset] = outcome
        }
        return assets.isEmpty || !missing.isEmpty ? .incomplete(missing) : .available
    }

    // MARK: Asset

    package func status(ofAsset identifier: String) throws(LibraryError) -> AssetStatus {
        guard let status = lastKnownStatus(ofAsset: identifier) else {
            throw LibraryError(.assetNotFound, "asset \(identifier) is not in the library")
        }
        return status
    }

    // The commands return once the change they made is committed: what the app is told
    // survives a kill -9.

    package func download(_ asset: AssetDownload, delegate: (any AssetDownloadDelegate)?) async throws(LibraryError) {
        start(asset, delegate: delegate)
        try await recorded(asset: asset.identifier)
    }

    /// ``download(_:delegate:)`` without waiting for the change to be committed: for the daemon's
    /// own starts (feeds, claims at its start), which no app awaits.
    package func start(_ asset: AssetDownload, delegate: (any AssetDownloadDelegate)?) {
        scheduler.download(asset, delegate: delegate)
    }

    package func pause(asset identifier: String) async throws(LibraryError) {
        scheduler.pause(identifier)
        try await recorded(asset: identifier)
    }

    package func resume(asset identifier: String) async throws(LibraryError) {
        guard let record = store.asset(id: identifier) else { return }
        try await download(asset(identifier, issueName: record.issueName), delegate: nil)
    }

    package func cancel(asset identifier: String) async throws(LibraryError) {
        scheduler.cancel(identifier)
        try await recorded(asset: identifier)
    }

    /// Returns once every change to asset `identifier` queued so far is committed, without
    /// blocking a thread (see `LibraryStore.recorded`).
    package func recorded(asset identifier: String) async throws(LibraryError) {
        try await store.recorded(identifier)
    }

    package func events(of asset: AssetDownload) async throws(LibraryError) -> DownloadEvents {
        let events = DownloadEvents.attached { delegate in scheduler.download(asset, delegate: delegate) }
        try await recorded(asset: asset.identifier)
        return events
    }

    package func waitUntilFinished(asset identifier: String) async throws(CancellationError) -> AssetOutcome {
        try await scheduler.waitUntilFinished(identifier)
    }

    package func updateExpectedSHA256(_ sha256: String?, ofAsset identifier: String) throws(LibraryError) {
        try scheduler.updateChecksum(identifier, sha256: sha256)
    }

    // MARK: Synchronous reads

    package func lastKnownIssues() -> [Issue] { store.issues().map(issue(_:)) }

    package func lastKnownIssue(named name: String) -> Issue? { store.issue(named: name).map(issue(_:)) }

    package func lastKnownCurrentlyReadingIssue() -> Issue? {
        store.meta("currentlyReadingIssue").flatMap { lastKnownIssue(named: $0) }
    }

    package func lastKnownBadgeCount() -> Int { store.countNewIssues() }

    package func lastKnownDownloadingAssets() -> [AssetDownload] { scheduler.activeAssets() }

    package func lastKnownActivity() throws(LibraryError) -> LibraryActivity { try scheduler.activity() }

    package func lastKnownCounts() throws(LibraryError) -> [String: AssetCounts] { try store.assetCounts() }

    package func lastKnownCounts(ofIssue name: String) throws(LibraryError) -> AssetCounts {
        try store.assetCounts(issueName: name)[name] ?? AssetCounts()
    }

    package func lastKnownAssets(ofIssue name: String) -> [AssetDownload] {
        store.assetIDs(issueName: name).map { asset($0, issueName: name) }
    }

    package func lastKnownIsNew(issue name: String) -> Bool { store.issue(named: name)?.isNew ?? false }

    package func lastKnownCoverURL(ofIssue name: String) -> URL? {
        store.issue(named: name).flatMap(coverURL(of:))
    }

    /// The cover of the issue of `record`, if it has one.
    func coverURL(of record: IssueRecord) -> URL? {
        record.coverPath.map { scheduler.layout.contentURL(issue: record.name.text).appendingPathComponent($0.text) }
    }

    package func lastKnownStatus(ofAsset identifier: String) -> AssetStatus? {
        // The live view first: progress callbacks read it without waiting for the store.
        if let live = scheduler.snapshot(identifier) {
            // What an indexed file cost is recorded with its end, in its row only (the row may
            // lag the live state: the state comes from the live view, never from the row).
            let reused = live.request.index == nil ? 0 : store.asset(id: identifier)?.bytesReused ?? 0
            return AssetStatus(identifier: identifier, live: live, bytesReused: reused)
        }
        return store.asset(id: identifier).map(scheduler.status(of:))
    }

    package func lastKnownUserInfo(ofAsset identifier: String) -> JSONValue? {
        // Stored within the limits when added; checked again all the same: a row can be changed.
        let reader = JSONReader("userInfo of asset \(identifier) in the library's database",
                                limits: .appValue.with(maxBytes: max(scheduler.maxUserInfoBytes, JSONReader.Limits.appValue.maxBytes)))
        return store.asset(id: identifier)?.userInfo.flatMap { try? reader.decode(JSONValue.self, from: $0) }
    }
}

extension LibraryError {
    /// The error of a member that reads the library's own files or scheduler, asked of a
    /// library opened through a daemon.
    static func inProcessOnly(_ member: String) -> LibraryError {
        LibraryError(.invalidRequest, "\(member) needs a library opened in this process (Library.open), not through a daemon")
    }
}

extension Scheduler {
    /// The backend whose handles this scheduler's events and reconnections carry: the one
    /// serving it, or, when that one went away while transfers still run, a new one serving it.
    var backend: LocalBackend {
        backendReference.withLock { reference in
            if let backend = reference.backend { return backend }
            let backend = LocalBackend.orphaned(self)
            reference.backend = backend
            return backend
        }
    }

    /// Makes `backend` the one this scheduler's handles carry.
    func adopt(_ backend: LocalBackend) {
        backendReference.withLock { $0.backend = backend }
    }

    /// The backend, held weakly: it holds the scheduler.
    struct BackendReference {
        weak var backend: LocalBackend?
    }
}

/// A transfer running now and its bytes, read from memory.
package struct RunningTransfer: Sendable, Equatable {
    package var identifier: String
    package var totalBytesWritten: Int64
    package var expectedTotalBytes: Int64?
}

extension LocalBackend {
    /// The transfers running now with their bytes, from the scheduler's memory (no store read,
    /// whatever the size of the backlog): what a daemon reports as progress.
    package func runningTransfers() -> [RunningTransfer] {
        scheduler.state.withLock { state in
            state.entries.compactMap { id, entry in
                entry.state == .downloading
                    ? RunningTransfer(identifier: id, totalBytesWritten: entry.live.written.load(ordering: .relaxed),
                                      expectedTotalBytes: entry.live.expectedBytes)
                    : nil
            }
        }
    }

    /// The bytes of asset `identifier` while the scheduler holds it in memory (running, finishing,
    /// being delivered), `nil` once it left: one look under the scheduler's lock, never a store
    /// read, so an event's listener may call it on the thread that tells the event.
    package func bytesInMemory(ofAsset identifier: String) -> RunningTransfer? {
        scheduler.state.withLock { state in
            state.entries[identifier].map { entry in
                RunningTransfer(identifier: identifier, totalBytesWritten: entry.live.written.load(ordering: .relaxed),
                                expectedTotalBytes: entry.live.expectedBytes)
            }
        }
    }
}
