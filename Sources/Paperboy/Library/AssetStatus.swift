import Foundation

/// A snapshot of one asset, for listings (cheaper than reading each ``AssetDownload`` property).
public struct AssetStatus: Sendable, Hashable {
    /// The asset's stable identifier.
    public var identifier: String
    /// What is downloaded.
    public var request: AssetRequest
    /// Where the asset is, and why it waits when it waits.
    public var state: AssetState
    /// The progress count, as ``AssetDownload/totalBytesWritten`` (the whole size once finished;
    /// `0` after a cancel or a failure that kept nothing).
    public var totalBytesWritten: Int64
    /// The total size, once known.
    public var expectedTotalBytes: Int64?
    /// Failed attempts since the asset last made progress (or was asked for again).
    public var attempts: Int
    /// Why the asset failed, while ``state`` is failed: the error ``AssetDownload/waitUntilFinished()``
    /// returns, with its reason and codes.
    public var failure: LibraryError?
    /// Bytes of the file that were copied from files the library already held instead of being
    /// fetched, when it last finished: chunks of an indexed asset (``AssetRequest/index``) found
    /// in a version delivered before or in another delivered asset.
    ///
    /// The bytes fetched are the rest, ``totalBytesWritten`` minus these. `0` for an asset
    /// fetched whole, and until an indexed one finishes. Chunks copied in an attempt that was
    /// interrupted and then resumed count as fetched.
    public var bytesReused: Int64
    /// While the asset downloads over several connections or from mirrors
    /// (`connections_per_asset`, ``AssetRequest/mirrors``): its pieces, and each source's bytes
    /// and connections; `nil` otherwise.
    public var split: SplitProgress?

    /// A snapshot with these values (a client's, from what a daemon reported).
    package init(identifier: String, request: AssetRequest, state: AssetState, totalBytesWritten: Int64,
                 expectedTotalBytes: Int64?, attempts: Int, failure: LibraryError?, bytesReused: Int64 = 0,
                 split: SplitProgress? = nil) {
        self.identifier = identifier
        self.request = request
        self.state = state
        self.totalBytesWritten = totalBytesWritten
        self.expectedTotalBytes = expectedTotalBytes
        self.attempts = attempts
        self.failure = failure
        self.bytesReused = bytesReused
        self.split = split
    }

    /// The snapshot of an asset the scheduler holds, from its live view.
    init(identifier: String, live: Scheduler.Snapshot, bytesReused: Int64) {
        self.init(identifier: identifier, request: live.request, state: live.state, totalBytesWritten: live.written,
                  expectedTotalBytes: live.expected, attempts: live.attempts, failure: live.failure, bytesReused: bytesReused,
                  split: live.split)
    }
}

/// What a library is doing right now (see ``Library/activity()``).
public struct LibraryActivity: Sendable, Hashable, Codable {
    /// Assets transferring now.
    public var downloading = 0
    /// Assets waiting for a slot.
    public var queued = 0
    /// Assets waiting to retry after an error.
    public var waitingForRetry = 0
    /// Assets paused by the app.
    public var paused = 0
    /// Assets waiting for a network their policy allows.
    public var waitingForNetwork = 0
    /// Finished files waiting in the inbox for a delegate.
    public var inInbox = 0
    /// Assets that gave up.
    public var failed = 0
    /// The progress count (``AssetDownload/totalBytesWritten``) of assets not yet delivered.
    public var bytesWritten: Int64 = 0
    /// Known total size of assets not yet delivered (assets of unknown size count what they have).
    public var expectedBytes: Int64 = 0

    /// Nothing at work.
    public init() {}
}

extension Issue {
    /// Snapshots of the issue's assets, in the order they were added. Throws ``LibraryError``
    /// when the library cannot be read, or is opened through a daemon.
    public var assetStatuses: [AssetStatus] {
        get throws {
            var statuses: [AssetStatus] = []
            try forEachAssetStatus { statuses.append($0) }
            return statuses
        }
    }

    /// Calls `body` with a snapshot of each of the issue's assets, in the order they were added,
    /// read from the library a page at a time: memory holds one page (1,000 assets) however big
    /// the issue is, and `body` may use the library. Assets added or removed meanwhile may or
    /// may not be seen. Throws ``LibraryError`` when the library cannot be read (never taken
    /// for "no more assets"), or what `body` throws. In-process only: through a daemon it throws
    /// `.invalidRequest` (``assets()`` and ``AssetDownload/status()`` work both ways).
    public func forEachAssetStatus(_ body: (AssetStatus) throws -> Void) throws {
        guard let scheduler else { throw LibraryError.inProcessOnly("Issue.forEachAssetStatus") }
        try scheduler.store.forEachAsset(issueName: name) { record in try body(scheduler.status(of: record)) }
    }

    /// Where a page of ``assetStatuses(after:limit:)`` ends: the next page starts after it.
    package struct PageCursor: Sendable, Hashable {
        package var seq: Int64
        package var id: String

        package init(seq: Int64, id: String) {
            self.seq = seq
            self.id = id
        }
    }

    /// At most `limit` snapshots of the issue's assets after `cursor`, in the order they were
    /// added, and the cursor of the next page (`nil` after the last): a client lists a big issue
    /// a page at a time, each read on its own. Throws when the library cannot be read, or is
    /// opened through a daemon.
    package func assetStatuses(after cursor: PageCursor?, limit: Int) throws(LibraryError) -> (statuses: [AssetStatus], next: PageCursor?) {
        guard let scheduler else { throw LibraryError.inProcessOnly("Issue.assetStatuses(after:limit:)") }
        let page = try scheduler.store.assetPage(issueName: name, after: cursor.map { ($0.seq, $0.id) }, limit: max(1, limit))
        let next = page.count >= max(1, limit) ? page.last.map { PageCursor(seq: $0.seq, id: $0.id) } : nil
        return (page.map(scheduler.status(of:)), next)
    }
}

extension AssetDownload {
    /// A snapshot of the asset (state, progress, attempts, failure) read at once; `nil` when
    /// the library no longer has it. Through a daemon, what it last reported.
    package var status: AssetStatus? { backend.lastKnownStatus(ofAsset: identifier) }
}

extension Scheduler {
    /// An asset's snapshot: the live state of a transfer the scheduler holds, else its row.
    func status(of record: AssetRecord) -> AssetStatus {
        if let live = snapshot(record.id) { return AssetStatus(identifier: record.id, live: live, bytesReused: record.bytesReused) }
        let state = Scheduler.publicState(PersistedState(rawValue: record.state) ?? .idle, retryAt: record.retryAt,
                                          attempts: record.attempts, detail: record.detail, now: clock.now)
        return AssetStatus(identifier: record.id, request: record.request, state: state, totalBytesWritten: record.bytesKept,
                           expectedTotalBytes: record.expectedBytes, attempts: record.attempts, failure: record.libraryError,
                           bytesReused: record.bytesReused)
    }
}

extension Library {
    /// Counts and bytes of the work in progress. Throws ``LibraryError`` when the library cannot
    /// be read (never taken for "nothing to do"); through a daemon, what it last reported.
    public var activity: LibraryActivity {
        get throws(LibraryError) { try backend.lastKnownActivity() }
    }

    /// Counts and bytes of the work in progress.
    ///
    /// - Throws: ``LibraryError`` when the library (or its daemon) cannot be read (never taken
    ///   for "nothing to do").
    public func activity() async throws(LibraryError) -> LibraryActivity {
        try await backend.activity()
    }
}

extension Scheduler {
    /// Counts from the store (by state, on its index), with the live progress of transfers.
    func activity() throws(LibraryError) -> LibraryActivity {
        let totals = try store.stateTotals()
        var activity = LibraryActivity()
        activity.downloading = totals[.downloading]?.count ?? 0
        activity.queued = totals[.queued]?.count ?? 0
        activity.waitingForRetry = totals[.retry]?.count ?? 0
        activity.paused = totals[.paused]?.count ?? 0
        activity.waitingForNetwork = totals[.network]?.count ?? 0
        activity.inInbox = totals[.finished]?.count ?? 0
        activity.failed = totals[.failed]?.count ?? 0
        // Bytes of the assets at work only, as a client adds up a daemon's (`count(_:)`): not
        // those delivered, cancelled or never asked for.
        for (state, total) in totals where ![.idle, .delivered, .cancelled].contains(state) {
            activity.bytesWritten += total.written
            activity.expectedBytes += total.expected
        }
        // Bytes written since the last checkpoint of each running transfer.
        state.withLock { state in
            for entry in state.entries.values where entry.state == .downloading {
                let ahead = max(0, entry.live.written.load(ordering: .relaxed) - entry.bytesOnDisk)
                activity.bytesWritten += ahead
                activity.expectedBytes += max(0, (entry.live.expectedBytes ?? 0) - max(entry.expectedBytes ?? 0, entry.bytesOnDisk)) + ahead
            }
        }
        return activity
    }
}
