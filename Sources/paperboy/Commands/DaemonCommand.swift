import ArgumentParser
import Dispatch
import Foundation
import Logging
import Paperboy
import PaperboyWire
import PaperboyConfig
import PaperboyDaemon
import Synchronization

/// `paperboy daemon`: owns the library, downloads the configured issues, and serves clients on
/// the `[daemon] socket` until SIGTERM or SIGINT; SIGHUP reloads the configuration.
struct DaemonCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "daemon",
        abstract: "Run in the foreground, download the configured issues, and serve clients on a Unix socket.",
        discussion: """
            Logs go to standard error. SIGTERM or SIGINT stop it (transfers keep their bytes; exit 0); \
            SIGHUP reads the configuration again (bandwidth limits, new issues and feeds). Feeds with a \
            refresh are refreshed on their schedule, and all of them on NOTIFY ('paperboy notify'). \
            [hooks] on_issue_available runs for each issue that becomes available. See docs/Daemon.md.
            """
    )

    @OptionGroup var options: GlobalOptions

    func run() async throws {
        options.bootstrapLogging()
        let logger = Logger(label: "paperboy.daemon")
        let config = try options.loadConfiguration()
        // Signals are taken before anything can be interrupted half-way.
        let signals = SignalStream([SIGTERM, SIGINT, SIGHUP])
        // Claimed files must not deliver themselves before the server attaches to them.
        let library = try DaemonRoute.openInProcess(config, configuration: config.libraryConfiguration(),
                                                    transports: Transports.registry(for: config), deliversFinishedFiles: false)
        let daemon = Daemon(library: library, config: config, options: options, logger: logger)
        let server = DaemonServer(library: library, socket: config.daemon.socket, logger: logger,
                                  challengeTimeout: config.daemon.challengeTimeout) {
            try await daemon.reload()
        }
        daemon.server = server
        let feeds = FeedDuty(library: library, config: config, logger: logger)
        daemon.feeds = feeds
        server.answerNotifications { request in try await feeds.notify(request) }
        let hooks = HookDuty(library: library, logger: logger) { daemon.configuration }
        do {
            try server.start(activatedListener: DaemonSocket.activatedListener())
        } catch {
            Console.error("paperboy: \(error.message)")
            await library.close()
            throw ExitCode(1)
        }
        do {
            _ = try await daemon.addConfiguredIssues(config)
        } catch {
            logger.error("\(config.fileURL.lastPathComponent): \(error.message)")
        }
        await feeds.begin()
        SystemdNotifier.notify("READY=1")
        for await signal in signals.stream {
            if signal == SIGHUP {
                logger.notice("SIGHUP: reloading \(config.fileURL.path)")
                do {
                    let added = try await daemon.reload()
                    logger.notice("reloaded; \(added) new issue(s)")
                } catch {
                    logger.error("reload failed, the previous configuration stays: \(error)")
                }
                continue
            }
            logger.notice("stopping (transfers keep their bytes)")
            SystemdNotifier.notify("STOPPING=1")
            break
        }
        await feeds.stop()
        hooks.stop()
        server.stop()
        await library.close()
    }
}

/// The daemon's own state between signals and requests: the configuration in force.
final class Daemon: @unchecked Sendable {
    let library: Library
    let options: GlobalOptions
    let logger: Logger
    /// Set once before the server starts.
    var server: DaemonServer?
    /// Set once before the server starts: the feeds' schedules.
    var feeds: FeedDuty?
    private let config: Mutex<PaperboyConfiguration>

    init(library: Library, config: PaperboyConfiguration, options: GlobalOptions, logger: Logger) {
        self.library = library
        self.options = options
        self.logger = logger
        self.config = Mutex(config)
    }

    /// The configuration in force (the last one read without errors).
    var configuration: PaperboyConfiguration { config.withLock { $0 } }

    /// Adds the configuration's issues and assets that are not in the library, and starts every
    /// configured asset not delivered yet; returns how many issues were added.
    func addConfiguredIssues(_ config: PaperboyConfiguration) async throws(LibraryError) -> Int {
        let before = Set(library.issues.map(\.name))
        _ = try await SyncPlan.make(issues: config.issues, config: config, library: library)
        return Set(library.issues.map(\.name)).subtracting(before).count
    }

    /// Reads the configuration file again: new bandwidth limits apply to running transfers,
    /// new issues and assets are added and started. A file with errors changes nothing.
    func reload() async throws -> Int {
        let url = config.withLock { $0.fileURL }
        // Read first by a child process: a file that aborts the TOML parser ends the child only.
        if let problem = await ConfigurationPreflight.problem(with: url) {
            throw ReloadError(description: problem)
        }
        let fresh: PaperboyConfiguration
        do {
            fresh = try PaperboyConfiguration.load(contentsOf: url)
        } catch {
            throw ReloadError(description: error.description)
        }
        library.bandwidthLimiter.setBytesPerSecond(fresh.bandwidth.limit?.bytesPerSecond)
        library.setPerTransferBandwidthLimit(fresh.bandwidth.perTransfer?.bytesPerSecond)
        library.setBandwidthSchedule(fresh.bandwidth.librarySchedule)
        config.withLock { $0 = fresh }
        await feeds?.reconfigure(fresh)
        do {
            return try await addConfiguredIssues(fresh)
        } catch {
            throw ReloadError(description: "\(url.lastPathComponent): \(error.message)")
        }
    }

    struct ReloadError: Error, CustomStringConvertible {
        var description: String
    }
}

/// Signals as an asynchronous sequence (dispatch sources: no thread polls for them).
final class SignalStream {
    let stream: AsyncStream<Int32>
    private let sources: [any DispatchSourceSignal]

    init(_ numbers: [Int32]) {
        let (stream, continuation) = AsyncStream.makeStream(of: Int32.self)
        self.stream = stream
        sources = numbers.map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { continuation.yield(number) }
            source.resume()
            return source
        }
    }
}
