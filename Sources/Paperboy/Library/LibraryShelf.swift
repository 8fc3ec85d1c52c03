import Foundation

/// What a listing of the whole library shows (`paperboy issues` and `status`): every issue with
/// its status, the badge, the issue being read, the bandwidth statistics and the damaged rows.
/// Both backends give it (``Library/shelf()``), so a listing is the same in process and through
/// a daemon.
package struct LibraryShelf: Sendable {
    /// One issue of the shelf (and of a daemon's `SHELF` page: PaperboyWire's `ShelfIssue`).
    package struct Entry: Codable, Sendable {
        package var name: String
        package var date: Date
        /// ``Issue/Status`` raw value, from the issue's asset counts.
        package var status: String
        package var isNew: Bool
        package var contentPath: String
        package var coverPath: String?

        package init(name: String, date: Date, status: String, isNew: Bool, contentPath: String, coverPath: String?) {
            self.name = name
            self.date = date
            self.status = status
            self.isNew = isNew
            self.contentPath = contentPath
            self.coverPath = coverPath
        }

        /// `issue` as a listing shows it, its status from `counts` (``Library/assetCountsByIssue()``).
        package init(_ issue: Issue, counts: [String: AssetCounts]) {
            self.init(issue, isNew: issue.isNew, coverURL: issue.coverURL, counts: counts)
        }

        /// As ``init(_:counts:)``, with the issue's mark and cover as already read.
        init(_ issue: Issue, isNew: Bool, coverURL: URL?, counts: [String: AssetCounts]) {
            self.init(name: issue.name, date: issue.date, status: (counts[issue.name] ?? AssetCounts()).issueStatus.rawValue,
                      isNew: isNew, contentPath: issue.contentURL.path, coverPath: coverURL?.path)
        }
    }

    package var libraryPath: String
    package var badge: Int
    /// The name of the issue being read.
    package var reading: String?
    /// The limiter statistics recorded by the process that has the library open.
    package var bandwidth: BandwidthLimiter.Statistics?
    /// Issues, newest first.
    package var issues: [Entry]
    /// Rows that cannot be read, left out of ``issues`` and of the asset listings.
    package var damagedRows: [DamagedRow]
    /// The network the library's scheduler works with, as text (``NetworkStatus/description``).
    package var network: String?

    package init(libraryPath: String, badge: Int, reading: String?, bandwidth: BandwidthLimiter.Statistics?, issues: [Entry],
                 damagedRows: [DamagedRow], network: String? = nil) {
        self.libraryPath = libraryPath
        self.badge = badge
        self.reading = reading
        self.bandwidth = bandwidth
        self.issues = issues
        self.damagedRows = damagedRows
        self.network = network
    }
}

/// What the library's scheduler works with now, for a display: read without going through
/// the issues (in process from the scheduler; through a daemon, a `SHELF` page past the last).
package struct LibraryConditions: Sendable, Equatable {
    /// The network, as text (``NetworkStatus/description``).
    package var network: String?
    /// The global bandwidth limit in bytes per second; `nil`: unlimited.
    package var bandwidthLimit: Int64?

    package init(network: String?, bandwidthLimit: Int64?) {
        self.network = network
        self.bandwidthLimit = bandwidthLimit
    }
}

extension Library {
    /// The whole shelf, as a listing shows it (in process: read live; through a daemon: its
    /// `SHELF` pages).
    ///
    /// - Throws: ``LibraryError`` when the library (or its daemon) cannot be read.
    package func shelf() async throws(LibraryError) -> LibraryShelf {
        try await backend.shelf()
    }

    /// Calls `body` with a listing of each asset of the issue named `issue`, in the order they
    /// were added, read a page at a time (in process: the live state of running transfers;
    /// through a daemon: its `ASSETS` pages).
    package func forEachAssetListing(ofIssue issue: String, _ body: (AssetListing) -> Void) async throws(LibraryError) {
        try await backend.forEachAssetListing(ofIssue: issue, body)
    }

    /// The network and global bandwidth limit the library's scheduler works with now.
    package func conditions() async throws(LibraryError) -> LibraryConditions {
        try await backend.conditions()
    }
}

extension Library {
    /// Every issue's assets counted by state, as a shelf shows them (``LocalBackend/shelfCounts()``;
    /// through a daemon, the counts it last reported).
    package func shelfCounts() throws(LibraryError) -> [String: AssetCounts] {
        guard let local else { return try assetCountsByIssue() }
        return try local.shelfCounts()
    }
}

extension LocalBackend {
    package func shelf() throws(LibraryError) -> LibraryShelf {
        // Every issue's status from one aggregate query on an index, not from reading its assets.
        let counts = try shelfCounts()
        return LibraryShelf(libraryPath: root.path, badge: lastKnownBadgeCount(), reading: lastKnownCurrentlyReadingIssue()?.name,
                            bandwidth: recordedBandwidthStatistics,
                            // From the rows read once, not one more read per issue for each mark and cover.
                            issues: store.issues().map { record in
                                let issue = issue(record)
                                return LibraryShelf.Entry(issue, isNew: record.isNew, coverURL: coverURL(of: record), counts: counts)
                            },
                            damagedRows: (try? store.damagedRows()) ?? [],
                            network: conditions().network)
    }

    /// Every issue's assets counted by state, as much as its status on a shelf needs
    /// (``LibraryShelf/Entry``): the counts alone, from the (issueName, state) index, without
    /// reading every row for the bytes (25 of 30 ms with 100,000 assets).
    package func shelfCounts() throws(LibraryError) -> [String: AssetCounts] {
        try store.assetCounts(withBytes: false)
    }

    package func conditions() -> LibraryConditions {
        LibraryConditions(network: scheduler.state.withLock { $0.network }.description, bandwidthLimit: scheduler.limiter.bytesPerSecond)
    }

    /// The limiter statistics recorded by the process that has the library open (about once a second).
    var recordedBandwidthStatistics: BandwidthLimiter.Statistics? {
        let reader = JSONReader("bandwidth statistics in the library's database", limits: .stateFile)
        return store.meta("bandwidth").flatMap { try? reader.decode(BandwidthLimiter.Statistics.self, from: Data($0.utf8)) }
    }

    package func forEachAssetListing(ofIssue issue: String, _ body: (AssetListing) -> Void) throws(LibraryError) {
        guard let issue = lastKnownIssue(named: issue) else { return }
        do {
            try issue.forEachAssetListing(body)
        } catch let error as LibraryError {
            throw error
        } catch {
            throw LibraryError(.storage, "\(error)")
        }
    }
}
