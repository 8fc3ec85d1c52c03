import Foundation
import Paperboy
import PaperboyConfig

/// The end of a sync, in-process or through a daemon: a line for each asset not delivered, the
/// summary, the issues that became available and their hook, and the exit code.
struct SyncReport {
    /// The state and size of each planned asset at the end, by identifier.
    typealias Statuses = [String: (state: AssetState, totalBytesWritten: Int64)]

    let options: GlobalOptions
    let config: PaperboyConfiguration
    var entries: [SyncPlan.Entry]
    /// Assets the sync asked for (those not delivered when it started).
    var toDownload: Int
    var alreadyDelivered: Int
    var elapsed: Duration
    /// Feeds and issues that could not be used.
    var problems: [String] = []

    private(set) var failures = 0
    private(set) var waitingForNetwork = 0
    private(set) var delivered = 0
    private(set) var bytes: Int64 = 0

    init(options: GlobalOptions, config: PaperboyConfiguration, entries: [SyncPlan.Entry], toDownload: Int, alreadyDelivered: Int,
         elapsed: Duration, problems: [String]) {
        self.options = options
        self.config = config
        self.entries = entries
        self.toDownload = toDownload
        self.alreadyDelivered = alreadyDelivered
        self.elapsed = elapsed
        self.problems = problems
    }

    /// Counts the outcomes and prints a line for each asset not delivered.
    mutating func tally(_ statuses: Statuses) {
        for entry in entries {
            let status = statuses[entry.identifier]
            switch status?.state {
            case .delivered?:
                delivered += 1
                bytes += status?.totalBytesWritten ?? 0
            case .failed(let message)?:
                failures += 1
                // The line names the URL first: the error's own "(URL, code)" suffix would repeat it.
                let shown = entry.url.redactedString
                let detail = message.replacingOccurrences(of: " (\(shown), ", with: " (")
                Console.error("failed: \(entry.issue)/\(entry.path) (\(shown)): \(detail)")
            case .waiting(.network)?:
                waitingForNetwork += 1
                if options.verbose { Console.error("waiting: \(entry.issue)/\(entry.path): waiting for an allowed network") }
            case let state?:
                failures += 1
                Console.error("not delivered: \(entry.issue)/\(entry.path): \(state)")
            case nil:
                failures += 1
                Console.error("not delivered: \(entry.issue)/\(entry.path): the asset disappeared")
            }
        }
    }

    /// Prints the summary and the issues that became available, runs the hook for them (the
    /// library no longer held: a hook may run `paperboy read`), and returns the exit code.
    /// - Parameter network: the network status now, when known (a daemon does not say).
    mutating func finish(becameAvailable jobs: [IssueHook.Job], network: String?) async -> Int32 {
        if waitingForNetwork > 0 {
            let now = network.map { " (now: \($0))" } ?? ""
            Console.error("paperboy: \(waitingForNetwork) asset(s) wait for an allowed network\(now); run again, or use --wait")
        }
        if !options.quiet, toDownload > 0 {
            let seconds = max(elapsed.secondsValue, 0.001)
            let fetched = delivered - alreadyDelivered
            Console.line(String(
                format: "paperboy: %d of %d asset(s) delivered (%d now, %@ in %.2f s, %.0f assets/s)%@",
                delivered, entries.count, fetched, Console.bytes(bytes), seconds, Double(fetched) / seconds,
                failures > 0 ? ", \(failures) failed" : ""))
        }
        if !options.quiet {
            for issue in jobs.map(\.issue) { Console.line("paperboy: issue \(issue) is available") }
        }
        if let hook = IssueHook(config: config) {
            for failure in await hook.run(jobs) {
                Console.error("paperboy: \(failure)")
                problems.append(failure)
            }
        }
        if failures > 0 || !problems.isEmpty { return 1 }
        if waitingForNetwork > 0 { return 75 }
        return 0
    }
}
