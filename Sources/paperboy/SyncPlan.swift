import Foundation
import Paperboy
import PaperboyConfig

/// What one sync does: which wanted assets exist, which must be downloaded.
///
/// An asset is identified by its URL and destination path within its issue, so a wanted asset
/// that is already in the library (delivered or not) is never added twice; a changed `sha256`
/// replaces the old one of an asset not delivered yet.
///
/// The plan keeps counts and the planned issues, not a record per asset: a sync of 100,000
/// assets held 40 MiB of per-asset plan arrays (and another 25 MiB for its report) before.
/// Memory holds one issue's assets at a time while planning; the report reads them back from
/// the library an issue at a time (``SyncReport``).
struct SyncPlan {
    /// The issues planned, with their configured (or catalog) assets, in the order planned.
    var issues: [IssueEntry] = []
    /// The names of the planned issues, each once, in the order first planned.
    var issueNames: [String] = []
    private var plannedNames: Set<String> = []
    /// Planned assets: every configured asset that is in the library.
    var plannedCount = 0
    /// Planned assets not delivered yet (started, or to start).
    var toDownloadCount = 0
    /// Issues with at least one asset to download.
    var issuesWithWork: Set<String> = []
    var alreadyDelivered = 0
    /// Assets added to the library per call: one transaction in process (a sync of 100,000
    /// assets transfers while it is still adding them).
    static let batchSize = 1_000
    /// Assets added per call by this plan (tests plan in smaller batches).
    var batchSize = SyncPlan.batchSize
    /// The first batch of an issue is smaller: its transfers start while the rest are added
    /// (on the other core), instead of after the whole issue's rows are written.
    static let firstBatchSize = 32
    /// Called after each batch is added (tests hold the plan there).
    var afterBatch: (@Sendable () async -> Void)?

    /// How an asset is named in lines and on the progress display: `issue/path`.
    static func displayName(_ asset: AssetDownload) -> String {
        "\(asset.issueName)/\(asset.request?.destinationPath ?? asset.identifier)"
    }

    /// Plans every issue of `issues`, starting each download as it is planned; the first error stops it.
    static func make(issues: [IssueEntry], config: PaperboyConfiguration, library: Library) async throws(LibraryError) -> SyncPlan {
        var plan = SyncPlan()
        for issue in issues { try await plan.add(issue, config: config, library: library) }
        return plan
    }

    /// Adds `configured` to the library if it is not there, adds its missing assets, and starts
    /// the download of every one not delivered yet.
    mutating func add(_ configured: IssueEntry, config: PaperboyConfiguration, library: Library) async throws(LibraryError) {
        let issue = try await Self.issue(configured, in: library)
        // The issue's assets already in the library, by key: one issue at a time in memory.
        var byKey: [String: AssetListing] = [:]
        try await library.forEachAssetListing(ofIssue: configured.name) { listing in
            byKey[Self.key(listing.urlString, listing.destinationPath ?? "")] = listing
        }
        var missing: [(AssetRequest, JSONValue?)] = []
        var undelivered: [(identifier: String, stored: String?, configured: String?)] = []
        var planned = 0
        for asset in configured.assets {
            guard let listing = byKey[Self.key(asset.urlString, asset.path)] else {
                missing.append((Self.request(for: asset, config: config), nil))
                continue
            }
            planned += 1
            if listing.state == .delivered {
                alreadyDelivered += 1
            } else {
                undelivered.append((listing.identifier, listing.sha256, asset.sha256))
            }
        }
        // The issue may become complete (and new) only once every configured asset is in the
        // library: the first missing one is added idle, and asked for after the others are added.
        // Else a batch delivered before the next one is added completes the issue early (seen
        // through a daemon, whose client splits a large addition into several requests).
        var held: AssetDownload?
        var rest = missing[...]
        if missing.count > 1 {
            held = try await issue.addAssets([missing[0]], downloading: false).first
            planned += 1
            rest = missing.dropFirst()
        }
        var start = rest.startIndex
        while start < rest.endIndex {
            let size = start == rest.startIndex ? min(batchSize, Self.firstBatchSize) : batchSize
            let batch = Array(rest[start..<min(start + size, rest.endIndex)])
            start += batch.count
            // Written queued: the scheduler takes an asset of a higher priority than those it
            // holds at once, so one planned later never waits behind lower ones planned before it.
            planned += try await issue.addAssets(batch, downloading: true).count
            await afterBatch?()
        }
        try await held?.download()
        if !undelivered.isEmpty {
            // One read for the handles instead of one lookup per asset.
            var handles: [String: AssetDownload] = [:]
            for asset in try await issue.assets() { handles[asset.identifier] = asset }
            for (identifier, stored, configured) in undelivered {
                guard let download = handles[identifier] else { continue }
                try await Self.correctChecksum(of: download, stored: stored, configured: configured)
                try await download.download()
            }
        }
        let work = missing.count + undelivered.count
        if work > 0 { issuesWithWork.insert(configured.name) }
        toDownloadCount += work
        plannedCount += planned
        issues.append(configured)
        if plannedNames.insert(configured.name).inserted { issueNames.append(configured.name) }
    }

    /// The library's issue named as `configured`, added when it lacks it (also when another
    /// client, such as the daemon's own feeds, adds it meanwhile).
    private static func issue(_ configured: IssueEntry, in library: Library) async throws(LibraryError) -> Issue {
        if let found = try await library.issue(named: configured.name) { return found }
        do {
            return try await library.addIssue(name: configured.name, date: configured.date)
        } catch where error.code == .duplicateIssue {
            guard let found = try await library.issue(named: configured.name) else { throw error }
            return found
        }
    }

    /// Gives an asset not delivered yet the configured checksum when it differs from the one
    /// stored: the publisher corrected it, and the old one would fail every sync.
    static func correctChecksum(of download: AssetDownload, stored: String?, configured: String?) async throws(LibraryError) {
        if stored != configured { try await download.updateExpectedSHA256(configured) }
    }

    /// The library request for a configured (or catalog) asset.
    static func request(for asset: AssetEntry, config: PaperboyConfiguration) -> AssetRequest {
        var network: NetworkPolicyOverride?
        if asset.allowedNetworks != nil || asset.allowExpensive != nil || asset.allowConstrained != nil {
            network = NetworkPolicyOverride(
                allowedKinds: asset.allowedNetworks.map { Set($0.compactMap { NetworkStatus.Kind(rawValue: $0.rawValue) }) },
                allowsExpensive: asset.allowExpensive, allowsConstrained: asset.allowConstrained)
        }
        var request = AssetRequest(
            url: asset.url, sha256: asset.sha256, priority: asset.priority, destinationPath: asset.path,
            options: config.transportOptions(for: asset.url, asset: asset.options), network: network,
            unpack: asset.unpack.map { _ in UnpackFormat.zip }, role: asset.role == .cover ? .cover : .content)
        request.index = asset.index
        request.mirrors = asset.mirrors
        return request
    }

    /// What identifies a configured asset within its issue: its URL and destination path. The
    /// URL is compared without its user and password, as a daemon shows it: the same key both
    /// ways (a URL without `@` is used as it is, without parsing it).
    static func key(_ url: String, _ path: String) -> String {
        let shown = url.utf8.contains(UInt8(ascii: "@")) ? (URL(string: url)?.redacted.absoluteString ?? url) : url
        return shown + "\u{0}" + path
    }
}
