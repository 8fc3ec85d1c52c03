import Foundation
import Paperboy
import PaperboyClient
import PaperboyConfig

/// The end of a sync, in-process or through a daemon: a line for each planned asset that failed
/// or was not delivered, the summary, the issues that became available and their hook, and the
/// exit code.
///
/// The planned assets are read back an issue at a time (one issue's configured assets and one
/// page of its assets in memory, not a record per planned asset: a sync of 100,000 assets held
/// 25 MiB for its report when it kept one), from the library or from the daemon's pages.
struct SyncReport {
    /// One asset of a planned issue, as the tally reads it.
    struct Item {
        /// What identifies it within its issue (``SyncPlan/key(_:_:)`` of its URL and path).
        var key: String
        var state: AssetState
        var totalBytesWritten: Int64
        /// ``AssetStatus/bytesReused``.
        var bytesReused: Int64 = 0
    }

    /// Reads the assets of the issue named by its first argument, calling the second with each
    /// (none when there is no such issue: its planned assets disappeared).
    typealias IssueReader = (String, (Item) -> Void) async throws -> Void

    let options: GlobalOptions
    let config: PaperboyConfiguration
    /// Planned assets: every configured asset that is in the library.
    var planned: Int
    /// Assets the sync asked for (those not delivered when it started).
    var toDownload: Int
    var alreadyDelivered: Int
    var elapsed: Duration = .zero
    /// Feeds and issues that could not be used.
    var problems: [String] = []

    private(set) var failures = 0
    private(set) var waitingForNetwork = 0
    /// Assets left waiting for a retry due later than `[scheduler] max_sync_wait`.
    private(set) var waitingForRetry = 0
    private(set) var delivered = 0
    private(set) var bytes: Int64 = 0
    /// Of ``bytes``, those copied from files the library held instead of fetched.
    private(set) var bytesReused: Int64 = 0
    /// Planned issues whose assets are all delivered.
    private(set) var complete: Set<String> = []

    init(options: GlobalOptions, config: PaperboyConfiguration, planned: Int, toDownload: Int, alreadyDelivered: Int,
         problems: [String]) {
        self.options = options
        self.config = config
        self.planned = planned
        self.toDownload = toDownload
        self.alreadyDelivered = alreadyDelivered
        self.problems = problems
    }

    /// Counts the outcomes of the configured assets of `issues` (an issue planned twice counts
    /// twice), read through `read`, and prints a line for each asset not delivered.
    /// - Parameter key: what identifies a configured asset among those `read` gives.
    mutating func tally(issues: [IssueEntry], key: (AssetEntry) -> String, read: IssueReader) async {
        var order: [String] = []
        var plannedByIssue: [String: [IssueEntry]] = [:]
        for entry in issues {
            if plannedByIssue[entry.name] == nil { order.append(entry.name) }
            plannedByIssue[entry.name, default: []].append(entry)
        }
        for name in order {
            let assets = (plannedByIssue[name] ?? []).flatMap(\.assets)
            // The configured assets of this issue, by key.
            var wanted: [String: [AssetEntry]] = [:]
            for asset in assets { wanted[key(asset), default: []].append(asset) }
            var allDelivered = true
            var any = false
            do {
                try await read(name) { item in
                    any = true
                    if item.state != .delivered { allDelivered = false }
                    guard let found = wanted.removeValue(forKey: item.key) else { return }
                    for asset in found { tally(item, name: "\(name)/\(asset.path)", url: asset.url) }
                }
            } catch {
                // Unread, not delivered: the run fails rather than report what it cannot know.
                failures += wanted.values.reduce(0) { $0 + $1.count }
                Console.error("paperboy: issue \(name): \((error as? LibraryError)?.message ?? "\(error)")")
                continue
            }
            if any, allDelivered { complete.insert(name) }
            // Planned, and gone from the library meanwhile (or its issue with them).
            for asset in assets where wanted[key(asset)] != nil {
                failures += 1
                Console.error("not delivered: \(name)/\(asset.path): the asset disappeared")
            }
        }
    }

    private mutating func tally(_ item: Item, name: String, url: URL) {
        switch item.state {
        case .delivered:
            delivered += 1
            bytes = bytes.addingSaturated(item.totalBytesWritten)
            bytesReused = bytesReused.addingSaturated(min(item.bytesReused, item.totalBytesWritten))
        case .failed(let message):
            failures += 1
            // The line names the URL first: the error's own "(URL, code)" suffix would repeat it.
            let shown = url.redactedString
            let detail = message.replacingOccurrences(of: " (\(shown), ", with: " (")
            Console.error("failed: \(name) (\(shown)): \(detail)")
        case .waiting(.network):
            waitingForNetwork += 1
            if options.verbose { Console.error("waiting: \(name): waiting for an allowed network") }
        case .waiting(.retry(let until, let attempt)):
            // The run waited for every retry its limit allows (``RetryWaitLimit``): one left is
            // due later, and waits in the library for the daemon or the next sync.
            waitingForRetry += 1
            Console.error("waiting: \(name): retry \(attempt) is due at \(until.utcTimeText), later than [scheduler] max_sync_wait "
                          + "(\(DurationParser.string(for: config.scheduler.maxSyncWait))) allows a sync to wait")
        case let state:
            failures += 1
            Console.error("not delivered: \(name): \(state)")
        }
    }

    /// The summary's bytes: those delivered, and when any were reused, those fetched and the
    /// share reused (`120 MB delivered, 4.1 MB fetched (97 % reused)`).
    var deliveredBytes: String {
        guard bytesReused > 0, bytes > 0 else { return Console.bytes(bytes) }
        return "\(Console.bytes(bytes)) delivered, \(Console.bytes(bytes - bytesReused)) fetched (\(bytesReused * 100 / bytes) % reused)"
    }

    /// Prints the summary and the issues that became available, runs the hook for them (the
    /// library no longer held: a hook may run `paperboy read`), and returns the exit code.
    /// - Parameters:
    ///   - network: the network status now, when known (a daemon does not say).
    ///   - runsHook: whether this command runs `[hooks]` (``Paperboy/Library/commandRunsHooks``).
    mutating func finish(becameAvailable jobs: [IssueHook.Job], network: String?, runsHook: Bool) async -> Int32 {
        if waitingForNetwork > 0 {
            let now = network.map { " (now: \($0))" } ?? ""
            Console.error("paperboy: \(waitingForNetwork) asset(s) wait for an allowed network\(now); run again, or use --wait")
        }
        if waitingForRetry > 0 {
            Console.error("paperboy: \(waitingForRetry) asset(s) wait for a retry; run again later ('paperboy status' shows when each is due)")
        }
        if !options.quiet, toDownload > 0 {
            let seconds = max(elapsed.secondsValue, 0.001)
            let fetched = delivered - alreadyDelivered
            Console.line(String(
                format: "paperboy: %d of %d asset(s) delivered (%d now, %@ in %.2f s, %.0f assets/s)%@",
                delivered, planned, fetched, deliveredBytes, seconds, Double(fetched) / seconds,
                failures > 0 ? ", \(failures) failed" : ""))
        }
        if !options.quiet {
            for issue in jobs.map(\.issue) { Console.line("paperboy: issue \(issue) is available") }
        }
        if runsHook, let hook = IssueHook(config: config) {
            for failure in await hook.run(jobs) {
                Console.error("paperboy: \(failure)")
                problems.append(failure)
            }
        }
        if failures > 0 || !problems.isEmpty { return 1 }
        if waitingForNetwork > 0 || waitingForRetry > 0 { return 75 }
        return 0
    }
}

extension PaperboyConfiguration {
    /// How long a one-shot command waits for a retry (`[scheduler] max_sync_wait`): both sync
    /// engines wait with it, in-process and through a daemon.
    var syncRetryWaitLimit: RetryWaitLimit { RetryWaitLimit(maxWait: scheduler.maxSyncWait) }
}

extension Library {
    /// Whether a command that syncs this library runs `[hooks]` for the issues it made
    /// available: in process it does; through a daemon it does not, as the daemon runs its own
    /// hook for every issue that becomes available (running this one too would run it twice).
    var commandRunsHooks: Bool { daemon == nil }
}
