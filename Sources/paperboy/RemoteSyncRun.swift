import ArgumentParser
import Dispatch
import Foundation
import Logging
import Paperboy
import PaperboyClient
import PaperboyConfig
import PaperboyDaemon

/// `sync` and `add` through a daemon: the configuration's issues and assets are added to the
/// daemon's library (those missing) and asked for (those not delivered), then the run follows
/// them until each is delivered or failed (or waits for a network, without `--wait`) and ends as
/// an in-process sync does. Ctrl-C detaches: the downloads go on in the daemon.
struct RemoteSyncRun {
    let options: GlobalOptions
    let config: PaperboyConfiguration
    let client: DaemonBackend
    /// The daemon's library, for what ``Library``'s API does.
    let library: Library
    var wait = false
    var includeFeeds = true
    var issues: [IssueEntry]
    var source: String

    init(options: GlobalOptions, config: PaperboyConfiguration, client: DaemonBackend) {
        self.options = options
        self.config = config
        self.client = client
        library = Library(backend: client)
        issues = config.issues
        source = config.fileURL.lastPathComponent
    }

    /// Fetches the configuration's feeds through this process's transports (the daemon holds
    /// the library, not its catalogs), with the daemon's shelf and purge list for what is new.
    private func readFeeds(configuration: Library.Configuration) async -> FeedRefresh {
        let logger = Logger(label: "paperboy")
        let existing: Set<String>
        do {
            existing = Set(try await client.shelf().issues.map(\.name))
        } catch {
            return FeedRefresh(issues: [], failures: ["cannot list the daemon's issues: \(error.message)"])
        }
        let transports = Transports.registry(for: config)
        return await FeedRefresh.refresh(
            config: config, purged: PurgedIssues(root: client.libraryURL).names, logger: logger,
            fetch: { url, options throws(LibraryError) in
                try await Library.fetchData(from: url, transports: transports, configuration: configuration, options: options)
            },
            exists: { existing.contains($0) })
    }

    /// Runs the cycle and disconnects; returns the exit code.
    func perform() async -> Int32 {
        let detach = DetachHandler()
        defer { detach.cancel() }
        defer { client.disconnect() }
        // The feeds' catalogs are read here, as in-process (the daemon's own feeds are its
        // business): their issues are added and followed like the configured ones.
        // The configuration's secrets are read as in process, feeds or not: one that cannot be
        // read is a configuration error (said, exit 2), whichever process holds the library.
        let configuration: Library.Configuration
        do {
            configuration = try config.libraryConfiguration()
        } catch {
            return (error as? ExitCode)?.rawValue ?? 2
        }
        var issues = self.issues
        var problems: [String] = []
        if includeFeeds, !config.feeds.isEmpty {
            let refresh = await readFeeds(configuration: configuration)
            issues += refresh.issues.map(\.entry)
            problems += refresh.failures
            for failure in refresh.failures { Console.error("paperboy: \(failure)") }
        }
        let events: AsyncStream<LibraryEvent>
        do {
            events = try await library.events()
        } catch {
            Console.error("paperboy: \(error.message)")
            return 1
        }
        let started = ContinuousClock.now
        var plan = RemotePlan()
        do {
            for issue in issues { try await plan.add(issue, config: config, library: library) }
        } catch {
            Console.error("paperboy: \(source): \(error.message)")
            return 2
        }
        let narrator = options.quiet ? nil : SyncNarrator(display: nil, logger: Logger(label: "paperboy"), verbose: options.verbose)
        let narration = Task { [plan, verbose = options.verbose] in
            var announced: Set<String> = []
            for await event in events {
                guard case .assetStateChanged(let asset, let state) = event, let name = plan.names[asset.identifier] else { continue }
                let id = asset.identifier
                var bytes: Int64 = 0
                if verbose, state == .delivered { bytes = (try? await asset.status())?.totalBytesWritten ?? 0 }
                narrator?.narrate(id, named: name, state, bytes: bytes, announced: &announced)
            }
        }
        if plan.toDownload == 0, !options.quiet {
            Console.line("paperboy: nothing to do; \(plan.alreadyDelivered) asset(s) already delivered")
        }

        do {
            let planned = Set(plan.names.keys)
            let networkWaits = try await library.waitUntilSettled(assets: planned, ofIssues: plan.issueNames, includingNetworkWaits: false,
                                                                   retryWaitLimit: config.syncRetryWaitLimit)
            if networkWaits > 0, wait {
                if !options.quiet { Console.error("paperboy: \(networkWaits) asset(s) wait for an allowed network; waiting") }
                _ = try await library.waitUntilSettled(assets: planned, ofIssues: plan.issueNames, includingNetworkWaits: true,
                                                       retryWaitLimit: config.syncRetryWaitLimit)
            }
        } catch {
            Console.error("paperboy: \(error.message)")
            narration.cancel()
            return 1
        }
        narration.cancel()
        let elapsed = ContinuousClock.now - started

        // The same tally as in-process, the daemon's pages read an issue at a time. Replies show
        // URLs without their user and password: the configured ones are compared so.
        var report = SyncReport(options: options, config: config, planned: plan.plannedCount, toDownload: plan.toDownload,
                                alreadyDelivered: plan.alreadyDelivered, problems: problems)
        report.elapsed = elapsed
        await report.tally(issues: plan.issues, key: { SyncPlan.key($0.url.redacted.absoluteString, $0.path) }, read: reportItems)
        var jobs: [IssueHook.Job] = []
        if let shelf = try? await client.shelf() {
            jobs = shelf.issues
                .filter { report.complete.contains($0.name) && !plan.availableBefore.contains($0.name) }
                .sorted { ($0.date, $0.name) < ($1.date, $1.name) }
                .map { IssueHook.Job(name: $0.name, contentPath: $0.contentPath, coverPath: $0.coverPath, date: $0.date, badge: shelf.badge) }
        }
        return await report.finish(becameAvailable: jobs, network: nil, runsHook: library.commandRunsHooks)
    }

    /// The assets of the issue `name` as the report reads them, a page at a time (none when the
    /// issue is gone: its planned assets disappeared).
    private func reportItems(ofIssue name: String, _ body: (SyncReport.Item) -> Void) async throws {
        guard try await client.issue(named: name) != nil else { return }
        try await client.forEachAsset(ofIssue: name) { asset in
            let key = asset.request.map { SyncPlan.key($0.url.absoluteString, $0.destinationPath ?? "") } ?? ""
            body(SyncReport.Item(key: key, state: asset.state.state, totalBytesWritten: asset.totalBytesWritten))
        }
    }
}

/// What a sync through a daemon asked for.
///
/// Unlike ``SyncPlan``, it keeps a name per planned asset: the daemon's events carry only the
/// identifier, and the run follows the planned assets until each settles.
struct RemotePlan {
    /// The issues planned, with their configured assets, in the order planned.
    var issues: [IssueEntry] = []
    /// Planned issue names, in the order first planned.
    var issueNames: [String] = []
    /// The display name (`issue/path`) of each planned asset, by identifier.
    var names: [String: String] = [:]
    /// Planned assets: every configured asset.
    var plannedCount = 0
    var toDownload = 0
    var alreadyDelivered = 0
    /// Planned issues that were available before the sync and had nothing to download.
    var availableBefore: Set<String> = []

    /// Adds the issue if the daemon's library lacks it, adds its missing assets, and asks for
    /// every one not delivered (an asset is its URL and path within its issue, as in-process).
    mutating func add(_ configured: IssueEntry, config: PaperboyConfiguration, library: Library) async throws(LibraryError) {
        let issue: Issue
        if let found = try await library.issue(named: configured.name) {
            issue = found
        } else {
            do {
                issue = try await library.addIssue(name: configured.name, date: configured.date)
            } catch where error.code == .duplicateIssue {
                guard let found = try await library.issue(named: configured.name) else { throw error }
                issue = found
            }
        }
        if !issueNames.contains(configured.name) { issueNames.append(configured.name) }
        var existing: [String: AssetDownload] = [:]
        for asset in try await issue.assets() {
            // Replies show URLs without their user and password: compare them so.
            if let request = asset.request { existing[SyncPlan.key(request.url.absoluteString, request.destinationPath ?? "")] = asset }
        }
        var work = false
        for asset in configured.assets {
            let key = SyncPlan.key(asset.url.redacted.absoluteString, asset.path)
            let identifier: String
            if let found = existing[key] {
                identifier = found.identifier
                if found.state == .delivered {
                    alreadyDelivered += 1
                } else {
                    try await SyncPlan.correctChecksum(of: found, stored: found.request?.sha256, configured: asset.sha256)
                    try await found.download()
                    toDownload += 1
                    work = true
                }
            } else {
                let added = try await issue.addAsset(SyncPlan.request(for: asset, config: config))
                try await added.download()
                existing[key] = added
                identifier = added.identifier
                toDownload += 1
                work = true
            }
            if names[identifier] == nil { names[identifier] = "\(configured.name)/\(asset.path)" }
            plannedCount += 1
        }
        issues.append(configured)
        if !work, try await issue.status() == .available { availableBefore.insert(issue.name) }
    }
}

/// Ctrl-C (or SIGTERM) during a sync through a daemon: the command leaves, the downloads go on.
final class DetachHandler {
    private let sources: [any DispatchSourceSignal]

    init() {
        sources = [SIGINT, SIGTERM].map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler {
                Console.error("\npaperboy: detached; the daemon goes on downloading ('paperboy status' shows how far it is)")
                Foundation.exit(130)
            }
            source.resume()
            return source
        }
    }

    func cancel() {
        for source in sources { source.cancel() }
        signal(SIGINT, SIG_DFL)
        signal(SIGTERM, SIG_DFL)
    }
}
