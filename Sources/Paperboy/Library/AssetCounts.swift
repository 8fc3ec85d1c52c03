import Foundation

/// How many assets are in each state, and why those that wait are waiting: what a shelf, a
/// badge or a "why is nothing happening" line needs, counted by the library's database without
/// reading each asset (see ``Issue/assetCounts`` and ``Library/assetCountsByIssue()``).
///
/// Counts are of the states the library recorded, updates still queued for writing included;
/// a queued asset behind the per-host limit counts as ``queued``.
public struct AssetCounts: Sendable, Hashable, Codable {
    /// Added and never asked for.
    public var idle = 0
    /// Waiting for a transfer slot.
    public var queued = 0
    /// Waiting to retry after an error.
    public var waitingForRetry = 0
    /// Paused by the app.
    public var paused = 0
    /// Waiting for a network their policy allows.
    public var waitingForNetwork = 0
    /// Transferring.
    public var downloading = 0
    /// Complete, in the inbox, waiting to be delivered.
    public var finished = 0
    /// Delivered.
    public var delivered = 0
    /// Gave up.
    public var failed = 0
    /// Cancelled by the app.
    public var cancelled = 0
    /// The earliest retry among the assets waiting to retry.
    public var nextRetry: Date?
    /// The progress counts recorded (at the last checkpoint for running transfers).
    public var bytesWritten: Int64 = 0
    /// The known total sizes (assets of unknown size count what they have).
    public var expectedBytes: Int64 = 0

    public init() {}

    /// Every asset counted.
    public var total: Int {
        idle + waiting + downloading + finished + delivered + failed + cancelled
    }

    /// Assets asked for and not transferring now: queued, waiting to retry, paused, or waiting
    /// for a network (``AssetState/waiting(_:)``).
    public var waiting: Int { queued + waitingForRetry + paused + waitingForNetwork }

    /// The status of an issue holding these assets: ``Issue/Status/downloading`` while any is
    /// on its way (waiting, downloading or finished), ``Issue/Status/available`` when every one
    /// is delivered, ``Issue/Status/notDownloaded`` otherwise (none, or some idle, failed or
    /// cancelled).
    public var issueStatus: Issue.Status {
        if waiting + downloading + finished > 0 { return .downloading }
        if total > 0, delivered == total { return .available }
        return .notDownloaded
    }
}

extension Issue {
    /// The issue's assets counted by state (one aggregate query, whatever the issue's size).
    /// Throws ``LibraryError`` when the library cannot be read; through a daemon, the counts it
    /// last reported.
    public var assetCounts: AssetCounts {
        get throws(LibraryError) { try backend.lastKnownCounts(ofIssue: name) }
    }
}

extension Library {
    /// Every issue's assets counted by state, by issue name, in one aggregate query (issues
    /// without assets are absent). Throws ``LibraryError`` when the library cannot be read;
    /// through a daemon, the counts it last reported (``counts()`` asks it).
    public func assetCountsByIssue() throws(LibraryError) -> [String: AssetCounts] {
        try backend.lastKnownCounts()
    }

    /// Every issue's assets counted by state, by issue name (issues without assets are absent).
    ///
    /// - Throws: ``LibraryError`` when the library (or its daemon) cannot be read.
    public func counts() async throws(LibraryError) -> [String: AssetCounts] {
        try await backend.counts()
    }
}

extension AssetCounts {
    /// Counts one asset as its snapshot says (a client adding up what a daemon reported; the
    /// library itself counts in its database).
    package mutating func count(_ status: AssetStatus) {
        switch status.state {
        case .idle: idle += 1
        case .waiting(.queued), .waiting(.hostLimit): queued += 1
        case .waiting(.retry(let until, _)):
            waitingForRetry += 1
            nextRetry = min(nextRetry ?? until, until)
        case .waiting(.pausedByApp): paused += 1
        case .waiting(.network): waitingForNetwork += 1
        case .downloading: downloading += 1
        case .finished: finished += 1
        case .delivered: delivered += 1
        case .failed: failed += 1
        case .cancelled: cancelled += 1
        }
        bytesWritten = bytesWritten.addingSaturated(status.totalBytesWritten)
        expectedBytes = expectedBytes.addingSaturated(max(status.expectedTotalBytes ?? status.totalBytesWritten, status.totalBytesWritten))
    }
}

extension LibraryActivity {
    /// Counts one asset as its snapshot says, when it is not yet delivered, cancelled or idle
    /// (a client adding up what a daemon reported).
    package mutating func count(_ status: AssetStatus) {
        switch status.state {
        case .waiting(.queued), .waiting(.hostLimit): queued += 1
        case .waiting(.retry): waitingForRetry += 1
        case .waiting(.pausedByApp): paused += 1
        case .waiting(.network): waitingForNetwork += 1
        case .downloading: downloading += 1
        case .finished: inInbox += 1
        case .failed: failed += 1
        case .idle, .delivered, .cancelled: return
        }
        bytesWritten = bytesWritten.addingSaturated(status.totalBytesWritten)
        expectedBytes = expectedBytes.addingSaturated(max(status.expectedTotalBytes ?? status.totalBytesWritten, status.totalBytesWritten))
    }
}
