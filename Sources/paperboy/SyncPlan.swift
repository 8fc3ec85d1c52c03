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
    /// Planned assets: every configured asset that is in the library.
    var plannedCount = 0
    /// Planned assets not delivered yet (started, or to start).
    var toDownloadCount = 0
    /// The assets to download, kept only when ``startsDownloads`` is off (the caller starts them).
    var toDownload: [AssetDownload] = []
    /// Issues with at least one asset to download.
    var issuesWithWork: Set<String> = []
    var alreadyDelivered = 0
    /// Start each download as soon as it is planned (its batch written), instead of leaving it
    /// to the caller: a sync of 100,000 assets transfers while it is still adding them.
    var startsDownloads = false
    /// Assets added to the library per transaction.
    static let batchSize = 1_000

    /// How an asset is named in lines and on the progress display: `issue/path`.
    static func displayName(_ asset: AssetDownload) -> String {
        "\(asset.issueName)/\(asset.request?.destinationPath ?? asset.identifier)"
    }

    /// Plans every issue of `issues`; the first error stops it.
    static func make(issues: [IssueEntry], config: PaperboyConfiguration, library: Library,
                     startsDownloads: Bool = false) async throws(LibraryError) -> SyncPlan {
        var plan = SyncPlan()
        plan.startsDownloads = startsDownloads
        for issue in issues { try await plan.add(issue, config: config, library: library) }
        return plan
    }

    /// Adds `configured` to the library if it is not there, adds its missing assets, and plans
    /// the download of every one not delivered yet.
    mutating func add(_ configured: IssueEntry, config: PaperboyConfiguration, library: Library) async throws(LibraryError) {
        let issue: Issue
        if let found = try await library.issue(named: configured.name) {
            issue = found
        } else {
            issue = try await library.addIssue(name: configured.name, date: configured.date)
        }
        // The issue's assets already in the library, by key: one issue at a time in memory.
        var byKey: [String: AssetStatus] = [:]
        try Self.reading {
            try issue.forEachAssetStatus { status in
                byKey[Self.key(status.request.url.absoluteString, status.request.destinationPath ?? "")] = status
            }
        }
        var missing: [(AssetRequest, JSONValue?)] = []
        for asset in configured.assets where byKey[Self.key(asset.urlString, asset.path)] == nil {
            missing.append((Self.request(for: asset, config: config), nil))
        }
        var planned = 0
        for start in stride(from: 0, to: missing.count, by: Self.batchSize) {
            let batch = Array(missing[start..<min(start + Self.batchSize, missing.count)])
            // Written queued when downloads start now: the scheduler takes an asset of a higher
            // priority than those it holds at once, so one planned later never waits behind
            // lower ones planned before it.
            let added = try await issue.addAssets(batch, downloading: startsDownloads)
            if !startsDownloads { toDownload += added }
            planned += added.count
        }
        var work = planned
        if !byKey.isEmpty {
            // One query for the handles instead of one lookup per configured asset.
            var existing: [String: AssetDownload] = [:]
            for asset in issue.assets { existing[asset.identifier] = asset }
            for asset in configured.assets {
                guard let status = byKey[Self.key(asset.urlString, asset.path)], let download = existing[status.identifier] else { continue }
                planned += 1
                if status.state == .delivered {
                    alreadyDelivered += 1
                    continue
                }
                try await Self.correctChecksum(of: download, stored: status.request.sha256, configured: asset.sha256)
                if startsDownloads { try await download.download() } else { toDownload.append(download) }
                work += 1
            }
        }
        if work > 0 { issuesWithWork.insert(configured.name) }
        toDownloadCount += work
        plannedCount += planned
        issues.append(configured)
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
        return AssetRequest(
            url: asset.url, sha256: asset.sha256, priority: asset.priority, destinationPath: asset.path,
            options: config.transportOptions(for: asset.url, asset: asset.options), network: network,
            unpack: asset.unpack.map { _ in UnpackFormat.zip }, role: asset.role == .cover ? .cover : .content)
    }

    /// Runs a read of the library whose body cannot fail: only the library's own error escapes.
    static func reading(_ read: () throws -> Void) throws(LibraryError) {
        do {
            try read()
        } catch let error as LibraryError {
            throw error
        } catch {
            throw LibraryError(.storage, "\(error)")
        }
    }

    /// What identifies a configured asset within its issue: its URL and destination path.
    static func key(_ url: String, _ path: String) -> String { url + "\u{0}" + path }
}
