import Foundation

/// What serves a ``Library`` and its ``Issue`` and ``AssetDownload`` handles: the library's own
/// scheduler and store in this process (``LocalBackend``), or a paperboy daemon over its socket.
///
/// Requirements are keyed by plain values (an issue's name, an asset's identifier), so that a
/// conformer speaking a wire protocol holds no state of the handles. The handles it returns hold
/// the backend itself; two handles are equal when they name the same issue or asset of the same
/// backend object.
///
/// Every asynchronous operation that can fail throws ``LibraryError``: a daemon backend also
/// fails when it loses its socket. Waits throw only `CancellationError` and end with a `.closed`
/// outcome when the backend goes away (``AssetOutcome/closed``).
///
/// The synchronous `lastKnown…` reads serve the in-process conveniences (``Library/issues``,
/// ``AssetDownload/state``…). In-process they read the library live; a daemon backend answers with
/// what the daemon last reported (its replies and events) and never blocks on the socket.
package protocol LibraryBackend: AnyObject, Sendable {
    /// The library's folder (the daemon's, through a daemon).
    var root: URL { get }

    // MARK: Library

    /// Every issue, newest first.
    func issues() async throws(LibraryError) -> [Issue]
    /// The issue named `name`, if any.
    func issue(named name: String) async throws(LibraryError) -> Issue?
    /// Adds an issue (see ``Library/addIssue(name:date:)``).
    func addIssue(name: String, date: Date) async throws(LibraryError) -> Issue
    /// Removes an issue, its downloads and content (see ``Library/removeIssue(_:)``).
    func removeIssue(named name: String) async throws(LibraryError)
    /// The issue the user is reading.
    func currentlyReadingIssue() async throws(LibraryError) -> Issue?
    /// Records the issue the user is reading (`nil`: none).
    func setCurrentlyReadingIssue(named name: String?) async throws(LibraryError)
    /// How many issues are new.
    func badgeCount() async throws(LibraryError) -> Int
    /// Assets asked for and not yet delivered.
    func downloadingAssets() async throws(LibraryError) -> [AssetDownload]
    /// The asset with this identifier, if it still exists.
    func asset(identifier: String) async throws(LibraryError) -> AssetDownload?
    /// Library-wide events from now on, those `wants` accepts (all when `nil`); see ``Library/events(where:)``.
    func events(where wants: (@Sendable (LibraryEvent) -> Bool)?) async throws(LibraryError) -> AsyncStream<LibraryEvent>
    /// Counts and bytes of the work in progress.
    func activity() async throws(LibraryError) -> LibraryActivity
    /// Every issue's assets counted by state, by issue name.
    func counts() async throws(LibraryError) -> [String: AssetCounts]
    /// Removes the oldest available issues (see ``Library/purge(keep:budgetBytes:)``).
    func purge(keep: Int?, budgetBytes: Int64?) async throws(LibraryError) -> [String]
    /// Records a content-available trigger (see ``Library/contentAvailable(payload:throttle:dontThrottle:now:)``).
    func contentAvailable(payload: JSONValue?, throttle: Duration, dontThrottle: Bool, now: Date?) async throws(LibraryError)
        -> ContentAvailableResult
    /// The whole shelf as a listing shows it (see ``Library/shelf()``).
    func shelf() async throws(LibraryError) -> LibraryShelf
    /// The network and bandwidth limit the library's scheduler works with (see ``Library/conditions()``).
    func conditions() async throws(LibraryError) -> LibraryConditions
    /// Calls `body` with a listing of each of the issue's assets, a page at a time (nothing for
    /// an issue that does not exist).
    func forEachAssetListing(ofIssue name: String, _ body: (AssetListing) -> Void) async throws(LibraryError)
    /// Returns when none of the assets of the issues named `issues` is on its way
    /// (see ``Library/waitUntilSettled(ofIssues:includingNetworkWaits:retryWaitLimit:)``);
    /// returns how many of them wait for an allowed network.
    func waitUntilSettled(ofIssues issues: [String], includingNetworkWaits: Bool,
                          retryWaitLimit: RetryWaitLimit?) async throws(LibraryError) -> Int
    /// Stops serving: in-process, stops transfers and writes what is pending; through a daemon,
    /// leaves the daemon's downloads running and closes the socket.
    func close() async

    // MARK: Issue

    /// The issue's assets, in the order they were added.
    func assets(ofIssue name: String) async throws(LibraryError) -> [AssetDownload]
    /// Adds assets to the issue in one transaction, started at once with `downloading`.
    func addAssets(_ requests: [(AssetRequest, JSONValue?)], toIssue name: String, downloading: Bool) async throws(LibraryError)
        -> [AssetDownload]
    /// Clears the issue's new mark.
    func markRead(issue name: String) async throws(LibraryError)
    /// Whether the issue is complete, on its way, or neither.
    func status(ofIssue name: String) async throws(LibraryError) -> Issue.Status
    /// Whether the issue is new (counts in the badge).
    func isNew(issue name: String) async throws(LibraryError) -> Bool
    /// Waits until each of the issue's assets ends (see ``Issue/waitUntilAvailable()``).
    func waitUntilAvailable(issue name: String) async throws(CancellationError) -> IssueOutcome

    // MARK: Asset

    /// A snapshot of the asset; `.assetNotFound` when it no longer exists.
    func status(ofAsset identifier: String) async throws(LibraryError) -> AssetStatus
    /// Starts or reconnects `asset`, attaching `delegate` (see ``AssetDownload/download(delegate:)``).
    func download(_ asset: AssetDownload, delegate: (any AssetDownloadDelegate)?) async throws(LibraryError)
    /// Stops the transfer, keeping its bytes.
    func pause(asset identifier: String) async throws(LibraryError)
    /// Continues the asset with the delegates it has.
    func resume(asset identifier: String) async throws(LibraryError)
    /// Stops the transfer and removes its bytes.
    func cancel(asset identifier: String) async throws(LibraryError)
    /// Starts or reconnects `asset`, delivering its events as a sequence.
    func events(of asset: AssetDownload) async throws(LibraryError) -> DownloadEvents
    /// Waits until the asset is delivered, fails, or is cancelled.
    func waitUntilFinished(asset identifier: String) async throws(CancellationError) -> AssetOutcome
    /// Changes the SHA-256 the asset's file must have.
    func updateExpectedSHA256(_ sha256: String?, ofAsset identifier: String) async throws(LibraryError)

    // MARK: Synchronous reads (in-process: live; through a daemon: last reported, never blocking)

    /// Every issue, newest first.
    func lastKnownIssues() -> [Issue]
    /// The issue named `name`, if any.
    func lastKnownIssue(named name: String) -> Issue?
    /// The issue the user is reading.
    func lastKnownCurrentlyReadingIssue() -> Issue?
    /// How many issues are new.
    func lastKnownBadgeCount() -> Int
    /// Assets asked for and not yet delivered.
    func lastKnownDownloadingAssets() -> [AssetDownload]
    /// Counts and bytes of the work in progress.
    func lastKnownActivity() throws(LibraryError) -> LibraryActivity
    /// Every issue's assets counted by state, by issue name.
    func lastKnownCounts() throws(LibraryError) -> [String: AssetCounts]
    /// One issue's assets counted by state.
    func lastKnownCounts(ofIssue name: String) throws(LibraryError) -> AssetCounts
    /// Whether the issue is complete, on its way, or neither (by default, from
    /// ``lastKnownCounts(ofIssue:)``; ``Issue/Status/notDownloaded`` when they cannot be read).
    func lastKnownStatus(ofIssue name: String) -> Issue.Status
    /// The issue's assets, in the order they were added.
    func lastKnownAssets(ofIssue name: String) -> [AssetDownload]
    /// Whether the issue is new.
    func lastKnownIsNew(issue name: String) -> Bool
    /// The issue's delivered cover, if any.
    func lastKnownCoverURL(ofIssue name: String) -> URL?
    /// A snapshot of the asset; `nil` when it is not known (any more).
    func lastKnownStatus(ofAsset identifier: String) -> AssetStatus?
    /// The app's JSON data given with the asset.
    func lastKnownUserInfo(ofAsset identifier: String) -> JSONValue?
}

extension LibraryBackend {
    package func lastKnownStatus(ofIssue name: String) -> Issue.Status {
        (try? lastKnownCounts(ofIssue: name))?.issueStatus ?? .notDownloaded
    }
}
