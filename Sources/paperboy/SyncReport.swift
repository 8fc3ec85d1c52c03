import Foundation
import Paperboy
import PaperboyConfig

/// What a sync did to its planned assets, read back from the library an issue at a time (one
/// issue's assets in memory, not a record per planned asset), with a line for each asset that
/// failed or was not delivered.
struct SyncReport {
    var delivered = 0
    var failures = 0
    var waitingForNetwork = 0
    var bytes: Int64 = 0
    /// Issues whose assets are all delivered.
    var complete: Set<String> = []

    /// Tallies the planned assets of `plan`'s issues; `line` gets each problem's text.
    init(plan: SyncPlan, library: Library, verbose: Bool, line: (String) -> Void) {
        var order: [String] = []
        var planned: [String: [IssueEntry]] = [:]
        for entry in plan.issues {
            if planned[entry.name] == nil { order.append(entry.name) }
            planned[entry.name, default: []].append(entry)
        }
        for name in order {
            guard let issue = library.issue(named: name) else { continue }
            // The configured assets of this issue, by key (an issue planned twice counts twice).
            var wanted: [String: [AssetEntry]] = [:]
            for entry in planned[name] ?? [] {
                for asset in entry.assets { wanted[SyncPlan.key(asset.urlString, asset.path), default: []].append(asset) }
            }
            var allDelivered = true
            var any = false
            do {
                try issue.forEachAssetStatus { status in
                    any = true
                    if status.state != .delivered { allDelivered = false }
                    guard let assets = wanted.removeValue(forKey: SyncPlan.key(status.request.url.absoluteString, status.request.destinationPath ?? "")) else { return }
                    for asset in assets { tally(status, name: "\(name)/\(asset.path)", url: asset.url, verbose: verbose, line: line) }
                }
            } catch {
                // Unread, not delivered: the run fails rather than report what it cannot know.
                failures += wanted.values.reduce(0) { $0 + $1.count }
                line("paperboy: issue \(name): \((error as? LibraryError)?.message ?? "\(error)")")
                continue
            }
            if any, allDelivered { complete.insert(name) }
            // Planned, and gone from the library meanwhile.
            for asset in (planned[name] ?? []).flatMap(\.assets) where wanted[SyncPlan.key(asset.urlString, asset.path)] != nil {
                failures += 1
                line("not delivered: \(name)/\(asset.path): the asset disappeared")
            }
        }
    }

    private mutating func tally(_ status: AssetStatus, name: String, url: URL, verbose: Bool, line: (String) -> Void) {
        switch status.state {
        case .delivered:
            delivered += 1
            bytes += status.totalBytesWritten
        case .failed(let message):
            failures += 1
            // The line names the URL first: the error's own "(URL, code)" suffix would repeat it.
            let shown = url.redactedString
            let detail = message.replacingOccurrences(of: " (\(shown), ", with: " (")
            line("failed: \(name) (\(shown)): \(detail)")
        case .waiting(.network):
            waitingForNetwork += 1
            if verbose { line("waiting: \(name): waiting for an allowed network") }
        case let state:
            failures += 1
            line("not delivered: \(name): \(state)")
        }
    }
}
