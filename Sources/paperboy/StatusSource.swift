import Foundation
import Paperboy
import PaperboyWire
import PaperboyClient
import PaperboyDaemon

/// Where `paperboy status` reads: the library's database, or the daemon that serves it. Both
/// give the same fields, so the listing is the same either way.
protocol StatusSource {
    var libraryPath: String { get }
    /// The limiter statistics recorded by the process that has the library open.
    var bandwidth: BandwidthLimiter.Statistics? { get }
    /// Issues, newest first, their status from the aggregate counts.
    var headers: [StatusListing.IssueHeader] { get throws(LibraryError) }
    /// Each asset of the issue named `issue`, in the order added, read a page at a time.
    func forEachAsset(of issue: String, _ body: (StatusListing.AssetReport) -> Void) async throws
    /// Rows of the library that cannot be read (left out of ``headers`` and the assets).
    var damagedRows: [DamagedRow] { get }
}

/// The library's database, opened for reading (or nothing: no library yet).
struct LibraryStatusSource: StatusSource {
    let library: Library?
    let libraryPath: String

    init(library: Library?, libraryPath: String) {
        self.library = library
        self.libraryPath = library?.root.path ?? libraryPath
    }

    var bandwidth: BandwidthLimiter.Statistics? { library?.recordedBandwidthStatistics }
    var damagedRows: [DamagedRow] { DamagedRowReport.rows(of: library) }

    var headers: [StatusListing.IssueHeader] {
        get throws(LibraryError) {
            guard let library else { return [] }
            let counts = try library.assetCountsByIssue()
            return library.issues.map { issue in
                StatusListing.IssueHeader(name: issue.name, date: issue.date.utcDayText,
                                          status: (counts[issue.name] ?? AssetCounts()).issueStatus.rawValue, isNew: issue.isNew,
                                          contentPath: issue.contentURL.path)
            }
        }
    }

    /// Only the columns listed (``AssetListing``), not every asset's request.
    func forEachAsset(of issue: String, _ body: (StatusListing.AssetReport) -> Void) async throws {
        try await library?.issue(named: issue)?.forEachAssetListing { body(StatusListing.AssetReport($0)) }
    }
}

/// A daemon: the shelf (`SHELF`), then each issue's assets (`ASSETS`), a page at a time.
struct DaemonStatusSource: StatusSource {
    let client: DaemonBackend
    let shelf: ShelfReply

    init(client: DaemonBackend) async throws(LibraryError) {
        self.client = client
        shelf = try await client.shelf()
    }

    var libraryPath: String { shelf.libraryPath }
    var bandwidth: BandwidthLimiter.Statistics? { shelf.bandwidth }
    var damagedRows: [DamagedRow] { (shelf.damagedRows ?? []).compactMap(\.row) }

    var headers: [StatusListing.IssueHeader] {
        shelf.issues.map {
            StatusListing.IssueHeader(name: $0.name, date: $0.date.utcDayText, status: $0.status, isNew: $0.isNew, contentPath: $0.contentPath)
        }
    }

    func forEachAsset(of issue: String, _ body: (StatusListing.AssetReport) -> Void) async throws {
        try await client.forEachAsset(ofIssue: issue) { asset in
            var report = StatusListing.AssetReport(id: asset.id, url: asset.request?.url.redactedString ?? "", path: asset.request?.destinationPath,
                                                   state: asset.state.state, bytesWritten: asset.totalBytesWritten,
                                                   expectedBytes: asset.expectedTotalBytes, attempts: asset.attempts)
            // A failed one's reason is its failure's code, as the library's own listing gives it.
            if let failure = asset.state.failure { report.reason = AssetListing.failureCode(of: failure) }
            body(report)
        }
    }
}
