import Foundation
import Paperboy
import PaperboyConfig

/// What one sync does: which wanted assets exist, which must be downloaded.
///
/// An asset is identified by its URL and destination path within its issue, so a wanted asset
/// that is already in the library (delivered or not) is never added twice; a changed `sha256`
/// replaces the old one of an asset not delivered yet.
struct SyncPlan {
    struct Entry {
        var issue: String
        var path: String
        var url: URL
        var identifier: String
    }

    var entries: [Entry] = []
    var toDownload: [AssetDownload] = []
    /// Issues with at least one asset in ``toDownload``.
    var issuesWithWork: Set<String> = []
    var alreadyDelivered = 0
    /// Start each download as soon as it is planned (its batch written), instead of leaving it
    /// to the caller: a sync of 100,000 assets transfers while it is still adding them.
    var startsDownloads = false
    /// Assets added to the library per transaction.
    static let batchSize = 1_000

    /// The display name (`issue/path`) of each planned asset, by identifier.
    var names: [String: String] {
        Dictionary(entries.map { ($0.identifier, "\($0.issue)/\($0.path)") }, uniquingKeysWith: { first, _ in first })
    }

    /// Plans every issue of `issues`; the first error stops it.
    static func make(issues: [IssueEntry], config: PaperboyConfiguration, library: Library,
                     startsDownloads: Bool = false) throws(LibraryError) -> SyncPlan {
        var plan = SyncPlan()
        plan.startsDownloads = startsDownloads
        for issue in issues { try plan.add(issue, config: config, library: library) }
        return plan
    }

    /// Adds `configured` to the library if it is not there, adds its missing assets, and plans
    /// the download of every one not delivered yet.
    mutating func add(_ configured: IssueEntry, config: PaperboyConfiguration, library: Library) throws(LibraryError) {
        let issue: Issue
        if let found = library.issue(named: configured.name) {
            issue = found
        } else {
            issue = try library.addIssue(name: configured.name, date: configured.date)
        }
        var byKey: [String: AssetStatus] = [:]
        for status in issue.assetStatuses {
            byKey[Self.key(status.request.url, status.request.destinationPath ?? "")] = status
        }
        // One query for the handles instead of one lookup per configured asset.
        var existing: [String: AssetDownload] = [:]
        if !byKey.isEmpty {
            for asset in issue.assets { existing[asset.identifier] = asset }
        }
        var missing: [(AssetRequest, JSONValue?)] = []
        for asset in configured.assets where byKey[Self.key(asset.url, asset.path)] == nil {
            missing.append((Self.request(for: asset, config: config), nil))
        }
        var addedByKey: [String: AssetDownload] = [:]
        for start in stride(from: 0, to: missing.count, by: Self.batchSize) {
            let batch = Array(missing[start..<min(start + Self.batchSize, missing.count)])
            // Written queued when downloads start now: the scheduler takes an asset of a higher
            // priority than those it holds at once, so one planned later never waits behind
            // lower ones planned before it.
            let added = try issue.addAssets(batch, downloading: startsDownloads)
            for (asset, (request, _)) in zip(added, batch) {
                addedByKey[Self.key(request.url, request.destinationPath ?? "")] = asset
            }
        }
        for asset in configured.assets {
            let key = Self.key(asset.url, asset.path)
            let download: AssetDownload
            if let status = byKey[key] {
                guard let found = existing[status.identifier] else { continue }
                download = found
                if status.state != .delivered, status.request.sha256 != asset.sha256 {
                    // The publisher corrected the checksum: the old one would fail every sync.
                    try download.updateExpectedSHA256(asset.sha256)
                }
                if status.state == .delivered {
                    alreadyDelivered += 1
                } else {
                    if startsDownloads { download.download() }
                    toDownload.append(download)
                    issuesWithWork.insert(configured.name)
                }
            } else if let fresh = addedByKey[key] {
                download = fresh
                toDownload.append(download)
                issuesWithWork.insert(configured.name)
            } else {
                continue
            }
            entries.append(Entry(issue: configured.name, path: asset.path, url: asset.url, identifier: download.identifier))
        }
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

    private static func key(_ url: URL, _ path: String) -> String { url.absoluteString + "\u{0}" + path }
}
