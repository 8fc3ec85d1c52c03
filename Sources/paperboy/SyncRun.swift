import Foundation
import Logging
import Paperboy
import PaperboyConfig

/// One publisher cycle, shared by `sync`, `notify` and `add`, in process or through the daemon
/// serving the library (the same code both ways, over ``Library``'s shared API): refresh the
/// feeds, add what is new, download and deliver every wanted asset, run the hook for each issue
/// that became available, and report.
struct SyncRun {
    let options: GlobalOptions
    let config: PaperboyConfiguration
    let opened: OpenedLibrary
    /// Wait for an allowed network instead of exiting with 75.
    var wait = false
    /// Fetch the `[[feeds]]` catalogs.
    var includeFeeds = true
    /// The `[[issues]]` to plan (those of the configuration for `sync`).
    var issues: [IssueEntry]
    /// Where ``issues`` come from, for error messages.
    var source: String

    var library: Library { opened.library }

    init(options: GlobalOptions, config: PaperboyConfiguration, opened: OpenedLibrary) {
        self.options = options
        self.config = config
        self.opened = opened
        issues = config.issues
        source = config.fileURL.lastPathComponent
    }

    /// Runs the cycle and closes the library; returns the exit code.
    func perform() async -> Int32 {
        let logger = Logger(label: "paperboy")
        let interrupt = InterruptHandler(library: library)
        defer { interrupt.cancel() }

        var problems: [String] = []
        var feedIssues: [FeedRefresh.FeedIssue] = []
        if includeFeeds, !config.feeds.isEmpty {
            let refresh = await FeedRefresh.refresh(config: config, opened: opened, logger: logger)
            feedIssues = refresh.issues
            problems += refresh.failures
            for failure in refresh.failures { Console.error("paperboy: \(failure)") }
        }

        let started = ContinuousClock.now
        let events: AsyncStream<LibraryEvent>?
        var plan: SyncPlan
        do {
            // Subscribed before planning: downloads start while the plan is being written. Only
            // the states the narrator tells are queued for it: without --verbose, waits only.
            let verbose = options.verbose
            events = options.quiet ? nil : try await library.events { event in
                guard case .assetStateChanged(_, let state) = event else { return false }
                return SyncNarrator.tells(state, verbose: verbose)
            }
            plan = try await SyncPlan.make(issues: issues, config: config, library: library)
        } catch {
            // Interrupted while planning: the handler's close ended the plan; it exits with 130.
            await InterruptHandler.exitIfInterrupted()
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
        let plannedIssues = Set(plan.issueNames)
        // An issue with an asset to download is not available (that asset is not delivered):
        // only the others need their status.
        var availableBefore: Set<String> = []
        for name in plannedIssues.subtracting(plan.issuesWithWork) {
            if let issue = try? await library.issue(named: name), (try? await issue.status()) == .available { availableBefore.insert(name) }
        }

        let live = Console.isTerminal && !options.quiet
        let display = live ? ProgressDisplay(library: library, total: plan.toDownloadCount) : nil
        let narrator = options.quiet ? nil : SyncNarrator(display: display, logger: logger, verbose: options.verbose, issues: plannedIssues)
        // There are events exactly when there is a narrator (both unless quiet).
        let narration = narrator.flatMap { narrator in events.map { events in Task { await narrator.follow(events) } } }

        if plan.toDownloadCount == 0, !options.quiet {
            Console.line("paperboy: nothing to do; \(plan.alreadyDelivered) asset(s) already delivered")
        }

        display?.start()
        do {
            // A retry due later than max_sync_wait is not waited for: it stays in the library.
            let networkWaits = try await library.waitUntilSettled(ofIssues: plan.issueNames, includingNetworkWaits: false,
                                                                   retryWaitLimit: config.syncRetryWaitLimit)
            if networkWaits > 0, wait {
                let network = (try? await library.shelf())?.network.map { " (now: \($0))" } ?? ""
                let message = "\(networkWaits) asset(s) wait for an allowed network\(network); waiting"
                if let display { display.print("paperboy: \(message)") } else if !options.quiet { Console.error("paperboy: \(message)") }
                _ = try await library.waitUntilSettled(ofIssues: plan.issueNames, includingNetworkWaits: true,
                                                       retryWaitLimit: config.syncRetryWaitLimit)
            }
        } catch {
            display?.stop()
            // Interrupted: the handler's close of the library ended the wait (through a daemon,
            // the connection it closes), and it exits with 130; this path must not exit first
            // with 1 (DaemonCLITests' Ctrl-C test saw 1 in 4 runs of 30 under load).
            await InterruptHandler.exitIfInterrupted()
            Console.error("paperboy: \(error.message)")
            await library.close()
            narration?.cancel()
            return 1
        }
        display?.stop()
        await InterruptHandler.exitIfInterrupted()
        let elapsed = ContinuousClock.now - started

        var report = SyncReport(options: options, config: config, planned: plan.plannedCount, toDownload: plan.toDownloadCount,
                                alreadyDelivered: plan.alreadyDelivered, problems: problems)
        report.elapsed = elapsed
        await report.tally(issues: plan.issues, key: { SyncPlan.key($0.urlString, $0.path) }) { [library] name, body in
            try await library.forEachAssetListing(ofIssue: name) { listing in
                body(SyncReport.Item(key: SyncPlan.key(listing.urlString, listing.destinationPath ?? ""),
                                     state: listing.state, totalBytesWritten: listing.totalBytesWritten, bytesReused: listing.bytesReused))
            }
        }

        // Issues that became available in this run, oldest first, for the hook; the badge, the
        // network and the damaged rows, from one read of the shelf.
        let shelf = try? await library.shelf()
        let jobs = (shelf?.issues ?? [])
            .filter { plannedIssues.contains($0.name) && !availableBefore.contains($0.name) && report.complete.contains($0.name) }
            .sorted { ($0.date, $0.name) < ($1.date, $1.name) }
            .map { IssueHook.Job(name: $0.name, contentPath: $0.contentPath, coverPath: $0.coverPath, date: $0.date, badge: shelf?.badge ?? 0) }
        let damaged = shelf?.damagedRows ?? []
        await library.close()
        await narration?.value
        let code = await report.finish(becameAvailable: jobs, network: shelf?.network, runsHook: library.commandRunsHooks)
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
    /// The issues the sync planned: only their assets are told (a daemon serves others too).
    let issues: Set<String>

    func follow(_ events: AsyncStream<LibraryEvent>) async {
        var announcedNetworkWait: Set<String> = []
        for await event in events {
            guard case .assetStateChanged(let asset, let state) = event, issues.contains(asset.issueName) else { continue }
            // Only a delivered asset told with --verbose needs its bytes: read then (through a
            // daemon, the mirror may not have its last bytes yet).
            var bytes: Int64 = 0
            if verbose, state == .delivered { bytes = (try? await asset.status())?.totalBytesWritten ?? asset.totalBytesWritten }
            // Read only when told: each name reads the asset's destination path.
            narrate(asset.identifier, named: SyncPlan.displayName(asset), state, bytes: bytes, announced: &announcedNetworkWait)
        }
    }

    /// Whether an asset's change to `state` may be told (``narrate(_:named:_:bytes:announced:)``
    /// tells no other): the sync subscribes to these only.
    static func tells(_ state: AssetState, verbose: Bool) -> Bool {
        switch state {
        case .downloading, .delivered, .failed: verbose
        case .waiting(.retry), .waiting(.network): true
        default: false
        }
    }

    /// Tells one asset's new state (`name` and `bytes` are read only when told); `announced`
    /// holds the assets whose network wait was told.
    func narrate(_ identifier: String, named name: @autoclosure () -> String, _ state: AssetState, bytes: @autoclosure () -> Int64,
                 announced: inout Set<String>) {
        guard Self.tells(state, verbose: verbose) else { return }
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
