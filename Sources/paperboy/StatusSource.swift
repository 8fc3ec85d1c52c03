import Foundation
import Paperboy

/// What `paperboy issues` and `status` read: the shelf of the library as opened
/// (``DaemonRoute/openForReading(_:options:)``: in process or through its daemon, the same
/// fields either way), or an empty shelf when there is no library yet.
struct StatusSource {
    let library: Library?
    let shelf: LibraryShelf

    /// Reads the shelf of `library` (`nil`: no library at `libraryPath` yet).
    init(library: Library?, libraryPath: String) async throws(LibraryError) {
        self.library = library
        shelf = try await library?.shelf()
            ?? LibraryShelf(libraryPath: libraryPath, badge: 0, reading: nil, bandwidth: nil, issues: [], damagedRows: [])
    }

    var libraryPath: String { shelf.libraryPath }
    var bandwidth: BandwidthLimiter.Statistics? { shelf.bandwidth }
    var damagedRows: [DamagedRow] { shelf.damagedRows }

    /// Issues, newest first.
    var headers: [StatusListing.IssueHeader] {
        shelf.issues.map {
            StatusListing.IssueHeader(name: $0.name, date: $0.date.utcDayText, status: $0.status, isNew: $0.isNew, contentPath: $0.contentPath)
        }
    }

    /// Each asset of the issue named `issue`, in the order added, read a page at a time; only
    /// the columns listed (``AssetListing``), not every asset's request.
    func forEachAsset(of issue: String, _ body: (StatusListing.AssetReport) -> Void) async throws(LibraryError) {
        try await library?.forEachAssetListing(ofIssue: issue) { body(StatusListing.AssetReport($0)) }
    }
}
