import Foundation

/// One issue of a publication: a unique name, a date, a content folder, and its assets.
///
/// An `Issue` is a handle: its properties read the library's current state.
public struct Issue: Sendable, Hashable, CustomStringConvertible {
    /// The issue's status as a shelf shows it.
    ///
    /// The raw values are what `paperboy issues` and `paperboy status` print (and their JSON),
    /// and what `description` returns.
    public enum Status: String, Sendable, Hashable, CustomStringConvertible {
        /// No asset is on its way and the issue is not complete (no assets, or some failed,
        /// paused or never asked for). Its raw value is `none`, as printed since the first release;
        /// the case was called `none` before, which read as `Optional.none` in `issue?.status == .none`.
        case notDownloaded = "none"
        /// At least one asset is waiting, downloading, or waiting to be delivered.
        case downloading
        /// Every asset has been delivered.
        case available

        public var description: String { rawValue }
    }

    /// The unique name; also the name of the content folder.
    public let name: String
    /// The publication date.
    public let date: Date
    let scheduler: Scheduler

    init(record: IssueRecord, scheduler: Scheduler) {
        name = record.name.text
        date = record.date.date
        self.scheduler = scheduler
    }

    /// The folder that holds the issue's delivered content.
    public var contentURL: URL { scheduler.layout.contentURL(issue: name) }

    /// The issue's assets, in the order they were added; a row that cannot be read is left out
    /// (``Library/damagedRows`` names it).
    public var assets: [AssetDownload] {
        scheduler.store.assetIDs(issueName: name).map {
            AssetDownload(identifier: $0, issueName: name, scheduler: scheduler)
        }
    }

    /// Whether the issue is complete, on its way, or neither; ``Status/notDownloaded`` when the
    /// library cannot be read (``assetCounts`` throws the reason).
    public var status: Status { (try? assetCounts)?.issueStatus ?? .notDownloaded }

    /// The delivered cover image (an asset with the ``AssetRole/cover`` role), if any.
    public var coverURL: URL? {
        scheduler.store.issue(named: name)?.coverPath.map { contentURL.appendingPathComponent($0.text) }
    }

    /// Waits until each of the issue's assets (as of this call) is delivered, failed, or
    /// cancelled, and says whether the issue is complete.
    ///
    /// `.available` comes once the issue is recorded as new (and its cover, if any), after
    /// ``LibraryEvent/issueDownloadCompleted(_:)``. Like ``AssetDownload/waitUntilFinished()``, an
    /// idle or paused asset is waited for, and cancelling the waiting task ends the wait only.
    ///
    /// - Throws: `CancellationError` when the waiting task is cancelled.
    public func waitUntilAvailable() async throws(CancellationError) -> IssueOutcome {
        let assets = self.assets
        var missing: [AssetDownload: AssetOutcome] = [:]
        for asset in assets {
            let outcome = try await asset.waitUntilFinished()
            if case .delivered = outcome { continue }
            missing[asset] = outcome
        }
        return assets.isEmpty || !missing.isEmpty ? .incomplete(missing) : .available
    }

    /// Whether the issue became available and has not been marked read (counts in the badge).
    public var isNew: Bool { scheduler.store.issue(named: name)?.isNew ?? false }

    /// Clears ``isNew``.
    public func markRead() {
        scheduler.store.updateIssue(named: name) { $0.isNew = false }
    }

    /// Adds an asset to download into this issue; start it with ``AssetDownload/download(delegate:)``.
    ///
    /// - Parameters:
    ///   - request: what to download.
    ///   - userInfo: small JSON data of the app's, kept with the asset (64 KiB by default, 32 levels deep;
    ///     docs/Security.md lists the limits).
    /// - Throws: ``LibraryError`` for a malformed request, a too large `userInfo`, or a removed issue.
    @discardableResult
    public func addAsset(_ request: AssetRequest, userInfo: JSONValue? = nil) throws(LibraryError) -> AssetDownload {
        try addAssets([(request, userInfo)])[0]
    }

    /// Adds several assets in one transaction (much faster than one by one).
    ///
    /// - Parameters:
    ///   - requests: each asset's request and user info, as ``addAsset(_:userInfo:)`` takes them.
    ///   - downloading: also start them, as ``AssetDownload/download(delegate:)`` without a
    ///     delegate does, in the same transaction (they are written queued): the way to add
    ///     thousands of assets to download, since nothing is read back.
    @discardableResult
    public func addAssets(_ requests: [(AssetRequest, JSONValue?)], downloading: Bool = false) throws(LibraryError) -> [AssetDownload] {
        guard scheduler.store.issue(named: name) != nil else {
            throw LibraryError(.issueNotFound, "issue '\(name)' is not in the library")
        }
        var seq = scheduler.store.nextAssetSeq()
        var records: [AssetRecord] = []
        for (request, userInfo) in requests {
            let request = try request.validated()
            let userInfoJSON = try userInfo?.userInfoJSON(for: request.url, maxBytes: scheduler.maxUserInfoBytes)
            records.append(AssetRecord(
                id: Self.newAssetIdentifier(), issueName: name, seq: seq, request: request, userInfo: userInfoJSON,
                state: (downloading ? PersistedState.queued : .idle).rawValue, detail: nil, retryAt: nil, attempts: 0, bytesOnDisk: 0,
                expectedBytes: nil, validator: nil, validatorStrength: nil))
            seq += 1
        }
        try scheduler.store.insertAssets(records)
        if downloading { scheduler.enqueue(records) }
        return records.map { AssetDownload(identifier: $0.id, issueName: name, scheduler: scheduler) }
    }

    public var description: String { "Issue(\(name))" }

    public static func == (lhs: Issue, rhs: Issue) -> Bool {
        lhs.name == rhs.name && lhs.scheduler === rhs.scheduler
    }

    public func hash(into hasher: inout Hasher) { hasher.combine(name) }
}

extension Issue {
    /// A random (version 4) UUID in lowercase, the form asset identifiers have always had.
    /// Drawn with one `getrandom` call: Foundation's `UUID()` opens and reads /dev/urandom once
    /// per call, three system calls per asset when adding thousands (and
    /// `SystemRandomNumberGenerator` makes one call per 8 bytes).
    static func newAssetIdentifier() -> String {
        var bytes: (UInt64, UInt64) = (0, 0)
        let filled = withUnsafeMutableBytes(of: &bytes) { raw in
            POSIX.randomBytes(raw)
        }
        if !filled {
            var generator = SystemRandomNumberGenerator()
            bytes = (generator.next(), generator.next())
        }
        return withUnsafeMutableBytes(of: &bytes) { raw in
            raw[6] = (raw[6] & 0x0F) | 0x40  // version 4
            raw[8] = (raw[8] & 0x3F) | 0x80  // RFC 4122 variant
            return UUID(uuid: (raw[0], raw[1], raw[2], raw[3], raw[4], raw[5], raw[6], raw[7],
                               raw[8], raw[9], raw[10], raw[11], raw[12], raw[13], raw[14], raw[15]))
                .uuidString.lowercased()
        }
    }
}
