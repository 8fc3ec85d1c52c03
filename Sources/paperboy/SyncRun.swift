import ArgumentParser
import Foundation
import Logging
import Paperboy
import PaperboyConfig

/// One publisher cycle, shared by `sync`, `notify` and `add`: refresh the feeds, add what is
/// new, download and deliver every wanted asset, run the hook for each issue that became
/// available, and report.
struct SyncRun {
    let options: GlobalOptions
    let config: PaperboyConfiguration
    let library: Library
    /// Wait for an allowed network instead of exiting with 75.
    var wait = false
    /// Fetch the `[[feeds]]` catalogs.
    var includeFeeds = true
    /// The `[[issues]]` to plan (those of the configuration for `sync`).
    var issues: [IssueEntry]
    /// Where ``issues`` come from, for error messages.
    var source: String

    init(options: GlobalOptions, config: PaperboyConfiguration, library: Library) {
        self.options = options
        self.config = config
        self.library = library
        issues = config.issues
        source = config.fileURL.lastPathComponent
    }

    /// Opens the library of `config` for writing; exits with 1 when it cannot.
    static func openLibrary(_ config: PaperboyConfiguration, resumes: Bool = true, extraURLs: [URL] = [],
                            deliversFinishedFiles: Bool = true) throws -> Library {
        do {
            var configuration = try config.libraryConfiguration()
            configuration.resumesOnOpen = resumes
            configuration.deliversFinishedFilesOnOpen = deliversFinishedFiles
            return try Library.open(at: config.library.path, transports: Transports.registry(for: config, extraURLs: extraURLs),
                                    configuration: configuration)
        } catch let error as LibraryError {
            Console.error("paperboy: \(error.message)\(DaemonRoute.lockHint(config))")
            throw ExitCode(1)
        }
    }

    /// Runs the cycle and closes the library; returns the exit code.
    func perform() async -> Int32 {
        let logger = Logger(label: "paperboy")
        let interrupt = InterruptHandler(library: library)
        defer { interrupt.cancel() }

        var problems: [String] = []
        var feedIssues: [FeedRefresh.FeedIssue] = []
        if includeFeeds, !config.feeds.isEmpty {
            let refresh = await FeedRefresh.refresh(config: config, library: library, logger: logger)
            feedIssues = refresh.issues
            problems += refresh.failures
            for failure in refresh.failures { Console.error("paperboy: \(failure)") }
        }

        let started = ContinuousClock.now
        let events: AsyncStream<LibraryEvent>?
        var plan: SyncPlan
        do {
            // Subscribed before planning: downloads start while the plan is being written.
            events = options.quiet ? nil : try await library.events()
            plan = try await SyncPlan.make(issues: issues, config: config, library: library, startsDownloads: true)
        } catch {
            Console.error("paperboy: \(source): \(error.message)")
            await library.close()
            return 2
        }
        for feedIssue in feedIssues {
            do {
                try await plan.add(feedIssue.entry, config: config, library: library)
            } catch {
                let message = "feed '\(feedIssue.feed)': issue '\(feedIssue.entry.name)': \(error.message)"
                Console.error("paperboy: \(message)")
                problems.append(message)
            }
        }
        let plannedIssues = Set(plan.issues.map(\.name))
        // An issue with an asset to download is not available (that asset is not delivered):
        // only the others need their status, which reads every asset of the issue.
        var availableBefore: Set<String> = []
        for name in plannedIssues.subtracting(plan.issuesWithWork) {
            if let issue = try? await library.issue(named: name), issue.status == .available { availableBefore.insert(name) }
        }

        let live = Console.isTerminal && !options.quiet
        let display = live ? ProgressDisplay(library: library, total: plan.toDownloadCount) : nil
        let narrator = options.quiet ? nil : SyncNarrator(display: display, logger: logger, verbose: options.verbose)
        // There are events exactly when there is a narrator (both unless quiet).
        let narration = narrator.flatMap { narrator in events.map { events in Task { await narrator.follow(events) } } }

        if plan.toDownloadCount == 0, !options.quiet {
            Console.line("paperboy: nothing to do; \(plan.alreadyDelivered) asset(s) already delivered")
        }

        display?.start()
        // A retry due later than max_sync_wait is not waited for: it stays in the library.
        await library.waitUntilIdle(retryWaitLimit: config.syncRetryWaitLimit)
        // A failed read waits for nothing more: the report below says what is not delivered.
        let networkWaits = (try? library.activity)?.waitingForNetwork ?? 0
        if networkWaits > 0, wait {
            let message = "\(networkWaits) asset(s) wait for an allowed network (now: \(library.networkStatus)); waiting"
            if let display { display.print("paperboy: \(message)") } else if !options.quiet { Console.error("paperboy: \(message)") }
            await library.waitUntilIdle(includingNetworkWaits: true, retryWaitLimit: config.syncRetryWaitLimit)
        }
        display?.stop()
        if InterruptHandler.interrupted.load(ordering: .relaxed) {
            // The interrupt handler is closing the library and exits with 130.
            while true { try? await Task.sleep(for: .seconds(60)) }
        }
        let elapsed = ContinuousClock.now - started

        var report = SyncReport(options: options, config: config, planned: plan.plannedCount, toDownload: plan.toDownloadCount,
                                alreadyDelivered: plan.alreadyDelivered, problems: problems)
        report.elapsed = elapsed
        await report.tally(issues: plan.issues, key: { SyncPlan.key($0.urlString, $0.path) }) { [library] name, body in
            try await library.issue(named: name)?.forEachAssetStatus { status in
                body(SyncReport.Item(key: SyncPlan.key(status.request.url.absoluteString, status.request.destinationPath ?? ""),
                                     state: status.state, totalBytesWritten: status.totalBytesWritten))
            }
        }

        // Issues that became available in this run, oldest first, for the hook.
        var becameAvailable: [Issue] = []
        for name in plannedIssues.subtracting(availableBefore).intersection(report.complete) {
            if let issue = try? await library.issue(named: name) { becameAvailable.append(issue) }
        }
        becameAvailable.sort { ($0.date, $0.name) < ($1.date, $1.name) }
        let badge = library.badgeCount
        let jobs = becameAvailable.map { IssueHook.Job(issue: $0, badge: badge) }
        let network = library.networkStatus
        let damaged = DamagedRowReport.rows(of: library)
        await library.close()
        await narration?.value
        let code = await report.finish(becameAvailable: jobs, network: "\(network)", runsHook: library.commandRunsHooks)
        // The other issues were synced; the damaged rows are named, and the exit status says so.
        DamagedRowReport.tell(damaged)
        return damaged.isEmpty || code != 0 ? code : 1
    }
}

/// Tells what happens during a sync: above the live block on a terminal, as log lines otherwise.
///
/// Retries and network waits are told at the default level; each delivered or failed asset
/// with `--verbose`.
struct SyncNarrator: Sendable {
    let display: ProgressDisplay?
    let logger: Logger
    let verbose: Bool

    func follow(_ events: AsyncStream<LibraryEvent>) async {
        var announcedNetworkWait: Set<String> = []
        for await event in events {
            guard case .assetStateChanged(let asset, let state) = event else { continue }
            // Read only when told: each name reads the asset's destination path.
            narrate(asset.identifier, named: SyncPlan.displayName(asset), state, bytes: asset.totalBytesWritten,
                    announced: &announcedNetworkWait)
        }
    }

    /// Tells one asset's new state (`name` and `bytes` are read only when told); `announced`
    /// holds the assets whose network wait was told.
    func narrate(_ identifier: String, named name: @autoclosure () -> String, _ state: AssetState, bytes: @autoclosure () -> Int64,
                 announced: inout Set<String>) {
        switch state {
        case .downloading:
            detail("downloading \(name())")
        case .delivered:
            detail("delivered \(name()) (\(Console.bytes(bytes())))")
        case .failed(let message):
            detail("failed \(name()): \(message)")
        case .waiting(.retry(let until, let attempt)):
            tell("\(name()): retry \(attempt) in \(ProgressDisplay.duration(max(0, until.timeIntervalSinceNow), tenths: true))")
        case .waiting(.network):
            // The live block says it on a terminal.
            if display == nil, announced.insert(identifier).inserted {
                tell("\(name()): waiting for an allowed network")
            }
        default:
            break
        }
    }

    private func tell(_ text: String) {
        if let display { display.print(text) } else { logger.notice("\(text)") }
    }

    /// Per-asset lines, with `--verbose` only; the text is built only then (it may read the store).
    private func detail(_ text: @autoclosure () -> String) {
        guard verbose else { return }
        let line = text()
        if let display { display.print(line) } else { logger.info("\(line)") }
    }
}
