import Foundation
import Paperboy

/// The synchronous reads of ``LibraryBackend`` through a daemon: what it last reported (the
/// mirror), never a request.
extension DaemonBackend {
    package func lastKnownIssues() -> [Issue] { mirror.withLock { $0.allIssues(backend: self) } }

    package func lastKnownIssue(named name: String) -> Issue? { mirror.withLock { $0.issue(named: name, backend: self) } }

    package func lastKnownCurrentlyReadingIssue() -> Issue? {
        mirror.withLock { mirror in mirror.reading.flatMap { mirror.issue(named: $0, backend: self) } }
    }

    package func lastKnownBadgeCount() -> Int { mirror.withLock { $0.badge } }

    package func lastKnownDownloadingAssets() -> [AssetDownload] {
        let active = mirror.withLock { mirror in
            mirror.assets.filter { $0.value.status?.state.isActive ?? false }.map { ($0.key, $0.value.issueName) }.sorted { $0.0 < $1.0 }
        }
        return active.map { handle($0.0, issue: $0.1) }
    }

    package func lastKnownActivity() throws(LibraryError) -> LibraryActivity {
        mirror.withLock { mirror in
            var activity = LibraryActivity()
            for entry in mirror.assets.values { if let status = entry.status { activity.count(status) } }
            return activity
        }
    }

    package func lastKnownCounts() throws(LibraryError) -> [String: AssetCounts] {
        mirror.withLock { mirror in
            var counts: [String: AssetCounts] = [:]
            for entry in mirror.assets.values { if let status = entry.status { counts[entry.issueName, default: AssetCounts()].count(status) } }
            return counts
        }
    }

    package func lastKnownCounts(ofIssue name: String) throws(LibraryError) -> AssetCounts {
        mirror.withLock { $0.counts(ofIssue: name) }
    }

    package func lastKnownStatus(ofIssue name: String) -> Issue.Status { mirror.withLock { $0.status(ofIssue: name) } }

    package func lastKnownAssets(ofIssue name: String) -> [AssetDownload] {
        mirror.withLock { $0.assetIDs(ofIssue: name) }.map { handle($0, issue: name) }
    }

    package func lastKnownIsNew(issue name: String) -> Bool { mirror.withLock { $0.issues[name]?.isNew ?? false } }

    package func lastKnownCoverURL(ofIssue name: String) -> URL? {
        mirror.withLock { $0.issues[name]?.coverPath }.map { URL(fileURLWithPath: $0) }
    }

    package func lastKnownStatus(ofAsset identifier: String) -> AssetStatus? { mirror.withLock { $0.assets[identifier]?.status } }

    package func lastKnownUserInfo(ofAsset identifier: String) -> JSONValue? { mirror.withLock { $0.assets[identifier]?.userInfo } }
}
