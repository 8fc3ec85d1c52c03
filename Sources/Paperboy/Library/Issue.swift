import Foundation

/// One issue of a publication: a unique name, a date, a content folder, and its assets.
///
/// An `Issue` is a handle: ``name``, ``date`` and ``contentURL`` are read when it is made; its
/// methods work the same in-process and through a daemon; its other properties are in-process
/// conveniences that read the library's current state (through a daemon, what the daemon last
/// reported, never waiting for it).
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
    /// The folder that holds the issue's delivered content (the daemon's, through a daemon).
    public let contentURL: URL
    let backend: any LibraryBackend

    package init(name: String, date: Date, contentURL: URL, backend: any LibraryBackend) {
        self.name = name
        self.date = date
        self.contentURL = contentURL
        self.backend = backend
    }

    init(record: IssueRecord, backend: LocalBackend) {
        self.init(name: record.name.text, date: record.date.date,
                  contentURL: backend.scheduler.layout.contentURL(issue: record.name.text), backend: backend)
    }

    /// The scheduler of an in-process library; `nil` through a daemon.
    var scheduler: Scheduler? { (backend as? LocalBackend)?.scheduler }

    /// The issue's assets, in the order they were added; a row that cannot be read is left out
    /// (``Library/damagedRows`` names it).
    public var assets: [AssetDownload] { backend.lastKnownAssets(ofIssue: name) }

    /// The issue's assets, in the order they were added (see ``assets``).
    ///
    /// - Throws: ``LibraryError`` when a daemon cannot be reached.
    public func assets() async throws(LibraryError) -> [AssetDownload] {
        try await backend.assets(ofIssue: name)
    }

    /// Whether the issue is complete, on its way, or neither; ``Status/notDownloaded`` when the
    /// library cannot be read (``assetCounts`` throws the reason). Through a daemon, as it last
    /// reported.
    public var status: Status { backend.lastKnownStatus(ofIssue: name) }

    /// Whether the issue is complete, on its way, or neither.
    ///
    /// - Throws: ``LibraryError`` when the library (or its daemon) cannot be read.
    public func status() async throws(LibraryError) -> Status {
        try await backend.status(ofIssue: name)
    }

    /// The delivered cover image (an asset with the ``AssetRole/cover`` role), if any.
    public var coverURL: URL? { backend.lastKnownCoverURL(ofIssue: name) }

    /// Waits until each of the issue's assets (as of this call) is delivered, failed, or
    /// cancelled, and says whether the issue is complete.
    ///
    /// `.available` comes once the issue is recorded as new (and its cover, if any), after
    /// ``LibraryEvent/issueDownloadCompleted(_:)``. Like ``AssetDownload/waitUntilFinished()``, an
    /// idle or paused asset is waited for, and cancelling the waiting task ends the wait only.
    ///
    /// - Throws: `CancellationError` when the waiting task is cancelled.
    public func waitUntilAvailable() async throws(CancellationError) -> IssueOutcome {
        try await backend.waitUntilAvailable(issue: name)
    }

    /// Whether the issue became available and has not been marked read (counts in the badge).
    public var isNew: Bool { backend.lastKnownIsNew(issue: name) }

    /// Whether the issue became available and has not been marked read (see ``isNew``).
    ///
    /// - Throws: ``LibraryError`` when a daemon cannot be reached.
    public func isNew() async throws(LibraryError) -> Bool {
        try await backend.isNew(issue: name)
    }

    /// Clears ``isNew``.
    ///
    /// - Throws: ``LibraryError`` when a daemon cannot be reached.
    public func markRead() async throws(LibraryError) {
        try await backend.markRead(issue: name)
    }

    /// Adds an asset to download into this issue; start it with ``AssetDownload/download(delegate:)``.
    ///
    /// - Parameters:
    ///   - request: what to download.
    ///   - userInfo: small JSON data of the app's, kept with the asset (64 KiB by default, 32 levels deep;
    ///     docs/Security.md lists the limits).
    /// - Throws: ``LibraryError`` for a malformed request, a too large `userInfo`, or a removed issue.
    @discardableResult
    public func addAsset(_ request: AssetRequest, userInfo: JSONValue? = nil) async throws(LibraryError) -> AssetDownload {
        try await addAssets([(request, userInfo)])[0]
    }

    /// Adds several assets in one transaction (much faster than one by one).
    ///
    /// - Parameters:
    ///   - requests: each asset's request and user info, as ``addAsset(_:userInfo:)`` takes them.
    ///   - downloading: also start them, as ``AssetDownload/download(delegate:)`` without a
    ///     delegate does, in the same transaction (they are written queued): the way to add
    ///     thousands of assets to download, since nothing is read back.
    /// Through a daemon (`Library.connect`), every request is checked first as here, then the
    /// assets travel in `ADDASSETS` requests of at most 128 KiB each: one transaction per request,
    /// so a refusal by the daemon leaves the requests sent before it added (docs/Daemon.md).
    ///
    /// - Throws: ``LibraryError`` as ``addAsset(_:userInfo:)`` does, for the first request refused
    ///   (then none is added).
    @discardableResult
    public func addAssets(_ requests: [(AssetRequest, JSONValue?)], downloading: Bool = false) async throws(LibraryError)
        -> [AssetDownload] {
        try await backend.addAssets(requests, toIssue: name, downloading: downloading)
    }

    public var description: String { "Issue(\(name))" }

    /// The same issue of the same library (backend object).
    public static func == (lhs: Issue, rhs: Issue) -> Bool {
        lhs.name == rhs.name && lhs.backend === rhs.backend
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
