import ArgumentParser
import Dispatch
import Foundation
import Paperboy
import PaperboyConfig
import Synchronization

/// `paperboy sync`: adds the configured issues, downloads every undelivered asset, delivers it.
struct SyncCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sync",
        abstract: "Download every configured asset that is not delivered yet.",
        discussion: "Running it again does no work for what is already delivered; an interrupted sync resumes."
    )

    @OptionGroup var options: GlobalOptions

    @Flag(help: "Wait for an allowed network instead of exiting with 75 when assets wait for one.")
    var wait = false

    func run() async throws {
        options.bootstrapLogging()
        let config = try options.loadConfiguration()
        let library: Library
        do {
            library = try Library.open(at: config.library.path, transports: Transports.registry(for: config),
                                       configuration: try config.libraryConfiguration())
        } catch let error as LibraryError {
            Console.error("paperboy: \(error.message)")
            throw ExitCode(1)
        }
        let interrupt = InterruptHandler(library: library)
        defer { interrupt.cancel() }

        let plan: SyncPlan
        do {
            plan = try SyncPlan.make(config: config, library: library)
        } catch {
            Console.error("paperboy: \(config.fileURL.lastPathComponent): \(error.message)")
            await library.close()
            throw ExitCode(2)
        }
        if plan.toDownload.isEmpty, !options.quiet {
            Console.line("paperboy: nothing to do; \(plan.alreadyDelivered) asset(s) already delivered")
        }
        for asset in plan.toDownload { asset.download() }

        let started = ContinuousClock.now
        let progress = Console.isTerminal && !options.quiet ? ProgressLine(library: library, total: plan.toDownload.count) : nil
        progress?.start()
        await library.waitUntilIdle()
        if library.activity.waitingForNetwork > 0, wait {
            if !options.quiet {
                Console.error("paperboy: \(library.activity.waitingForNetwork) asset(s) wait for an allowed network (now: \(library.networkStatus)); waiting")
            }
            await library.waitUntilIdle(includingNetworkWaits: true)
        }
        progress?.stop()
        if InterruptHandler.interrupted.load(ordering: .relaxed) {
            // The interrupt handler is closing the library and exits with 130.
            while true { try? await Task.sleep(for: .seconds(60)) }
        }
        let elapsed = ContinuousClock.now - started

        var failures = 0
        var waitingForNetwork = 0
        var delivered = 0
        var bytes: Int64 = 0
        var statuses: [String: AssetStatus] = [:]
        for name in Set(plan.entries.map(\.issue)) {
            for status in library.issue(named: name)?.assetStatuses ?? [] { statuses[status.identifier] = status }
        }
        for entry in plan.entries {
            let status = statuses[entry.identifier]
            switch status?.state {
            case .delivered?:
                delivered += 1
                bytes += status?.totalBytesWritten ?? 0
            case .failed(let message)?:
                failures += 1
                Console.error("failed: \(entry.issue)/\(entry.path) (\(entry.url.redactedString)): \(message)")
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
        let network = library.networkStatus
        await library.close()
        if waitingForNetwork > 0 {
            Console.error("paperboy: \(waitingForNetwork) asset(s) wait for an allowed network (now: \(network)); run again, or use --wait")
        }
        if !options.quiet, !plan.toDownload.isEmpty {
            let seconds = max(elapsed.secondsValue, 0.001)
            let fetched = delivered - plan.alreadyDelivered
            Console.line(String(
                format: "paperboy: %d of %d asset(s) delivered (%d now, %@ in %.2f s, %.0f assets/s)%@",
                delivered, plan.entries.count, fetched, Console.bytes(bytes), seconds, Double(fetched) / seconds,
                failures > 0 ? ", \(failures) failed" : ""))
        }
        if failures > 0 { throw ExitCode(1) }
        if waitingForNetwork > 0 { throw ExitCode(75) }
    }
}

/// What one sync does: which configured assets exist, which must be downloaded.
struct SyncPlan {
    struct Entry {
        var issue: String
        var path: String
        var url: URL
        var identifier: String
    }

    var entries: [Entry] = []
    var toDownload: [AssetDownload] = []
    var alreadyDelivered = 0

    static func make(config: PaperboyConfiguration, library: Library) throws(LibraryError) -> SyncPlan {
        var plan = SyncPlan()
        for configured in config.issues {
            let issue: Issue
            if let found = library.issue(named: configured.name) {
                issue = found
            } else {
                issue = try library.addIssue(name: configured.name, date: configured.date)
            }
            let existing = issue.assetStatuses
            var byKey: [String: AssetStatus] = [:]
            for status in existing {
                byKey[Self.key(status.request.url, status.request.destinationPath ?? "")] = status
            }
            var missing: [(AssetRequest, JSONValue?)] = []
            for asset in configured.assets where byKey[Self.key(asset.url, asset.path)] == nil {
                var network: NetworkPolicyOverride?
                if asset.allowedNetworks != nil || asset.allowExpensive != nil || asset.allowConstrained != nil {
                    network = NetworkPolicyOverride(
                        allowedKinds: asset.allowedNetworks.map { Set($0.compactMap { NetworkStatus.Kind(rawValue: $0.rawValue) }) },
                        allowsExpensive: asset.allowExpensive, allowsConstrained: asset.allowConstrained)
                }
                missing.append((AssetRequest(url: asset.url, sha256: asset.sha256, priority: asset.priority,
                                             destinationPath: asset.path, options: config.transportOptions(for: asset.url),
                                             network: network), nil))
            }
            let added = try issue.addAssets(missing)
            var addedByKey: [String: AssetDownload] = [:]
            for (asset, (request, _)) in zip(added, missing) {
                addedByKey[Self.key(request.url, request.destinationPath ?? "")] = asset
            }
            for asset in configured.assets {
                let key = Self.key(asset.url, asset.path)
                let download: AssetDownload
                if let status = byKey[key] {
                    guard let found = library.asset(identifier: status.identifier) else { continue }
                    download = found
                    if status.state == .delivered {
                        plan.alreadyDelivered += 1
                    } else {
                        plan.toDownload.append(download)
                    }
                } else if let fresh = addedByKey[key] {
                    download = fresh
                    plan.toDownload.append(download)
                } else {
                    continue
                }
                plan.entries.append(Entry(issue: configured.name, path: asset.path, url: asset.url,
                                          identifier: download.identifier))
            }
        }
        return plan
    }

    private static func key(_ url: URL, _ path: String) -> String { url.absoluteString + "\u{0}" + path }
}

/// Stops cleanly on Ctrl-C: transfers stop with their bytes recorded, so the next sync resumes.
final class InterruptHandler {
    private let source: any DispatchSourceSignal

    init(library: Library) {
        signal(SIGINT, SIG_IGN)
        signal(SIGTERM, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: SIGINT, queue: .global())
        let handler: @Sendable () -> Void = {
            InterruptHandler.interrupted.store(true, ordering: .relaxed)
            Console.error("\npaperboy: interrupted; stopping (the next sync resumes)")
            Task {
                await library.close()
                Foundation.exit(130)
            }
        }
        source.setEventHandler(handler: handler)
        source.resume()
        self.source = source
        let term = DispatchSource.makeSignalSource(signal: SIGTERM, queue: .global())
        term.setEventHandler(handler: handler)
        term.resume()
        terminate = term
    }

    private let terminate: any DispatchSourceSignal

    /// Set once Ctrl-C or SIGTERM arrived: the handler closes the library and exits.
    static let interrupted = Atomic<Bool>(false)

    func cancel() {
        source.cancel()
        terminate.cancel()
        signal(SIGINT, SIG_DFL)
        signal(SIGTERM, SIG_DFL)
    }
}

extension Duration {
    var secondsValue: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
