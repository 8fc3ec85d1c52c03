import Foundation
import Logging
import Paperboy

/// A transport served by a helper executable, in any language, speaking the Paperboy transport
/// protocol over its stdin and stdout (specified in docs/WritingTransports.md).
///
/// Bytes flow through the core's sink, so the bandwidth limiter, progress, resume and checksums
/// apply unchanged; the next frame is read only after `write` returns, so back-pressure reaches
/// the helper through the pipe. Helpers that ended a transfer cleanly serve the next one to the
/// same origin (scheme, host, port), so a helper's login session is reused;
/// helpers that crash, hang, print garbage, send more than they announced or speak another
/// version fail the transfer with a ``TransportError`` naming the helper and quoting the end of
/// its stderr. Cancellation stops the helper (SIGTERM, then SIGKILL). On Linux a helper dies
/// with the process that started it, even one killed with SIGKILL, and it always sees end of
/// input when the core goes away.
///
/// Every timeout is measured on one clock, given at creation (the system's by default): the
/// job's connect and idle timeouts while waiting for a helper, the termination grace, an idle
/// helper's `keepAlive`, and the short waits for a failed helper's exit status and last words.
/// A test passes PaperboyTesting's `TestClock` and moves time past each of them by hand.
///
/// ```swift
/// var registry = TransportRegistry([FileTransport()])
/// registry.register(ExecTransport(scheme: "tree", command: ["/opt/bin/tree-helper", "--root", "/srv"]))
/// if let ipfs = ExecTransport.discover(scheme: "ipfs") { registry.register(ipfs) }   // paperboy-transport-ipfs on PATH
/// ```
public struct ExecTransport: Transport {
    /// The helper's executable and arguments.
    public let command: [String]
    public let schemes: Set<String>
    public let capabilities: TransportCapabilities
    private let pool: HelperPool

    /// Creates a transport for `scheme` served by `command`.
    ///
    /// - Parameters:
    ///   - scheme: the URL scheme served (more may be given in `schemes`).
    ///   - command: the executable (a path, or a name looked up on `PATH`) and its arguments.
    ///   - capabilities: what the helper can do, declared up front (the scheduler reads it before
    ///     any helper runs); a helper without resume simply answers `BEGIN` at offset 0.
    ///     `.ranges` only for a helper whose `HELLO` lists `ranges` (a range asked of one that
    ///     does not fails, not retryable); `.segments` is left out: a helper sends one stream.
    ///   - environment: the helper's environment (default: this process's). Pass one without the
    ///     variables that hold secrets (`PaperboyConfiguration.childEnvironment(from:)`): a helper
    ///     gets credentials only by answering challenges.
    ///   - maxIdleHelpers: helpers kept running between transfers, per origin (scheme, host,
    ///     port); pass the scheduler's per-host limit (`Library.Configuration.maxTransfersPerHost`)
    ///     so that a host's transfers never start more helpers than run at once.
    ///   - keepAlive: how long an idle helper is kept.
    ///   - terminationGrace: time between SIGTERM and SIGKILL when stopping a helper.
    ///   - clock: where every timeout above and the job's are measured.
    ///   - logger: where the helper's stderr lines go (level info).
    public init(
        scheme: String, command: [String], schemes: Set<String> = [],
        capabilities: TransportCapabilities = [.resume, .validators, .challenges],
        environment: [String: String]? = nil, maxIdleHelpers: Int = 4, keepAlive: Duration = .seconds(30),
        terminationGrace: Duration = .seconds(1), clock: any LibraryClock = SystemClock(),
        logger: Logger = Logger(label: "paperboy.exec")
    ) {
        self.command = command
        self.schemes = Set(([scheme] + schemes).map { $0.lowercased() })
        self.capabilities = capabilities.subtracting(.segments)
        pool = HelperPool(
            command: command, environment: environment ?? ProcessInfo.processInfo.environment,
            maxIdle: max(0, maxIdleHelpers), keepAlive: keepAlive, grace: terminationGrace, clock: clock, logger: logger)
    }

    /// What a helper is taken to do when registered from a configuration or the command line:
    /// resume, validators and challenges, and one range per job when `ranges` says so
    /// (`[[transports]] ranges`, `paperboy conformance --ranges`).
    package static func helperCapabilities(ranges: Bool) -> TransportCapabilities {
        ranges ? [.resume, .validators, .challenges, .ranges] : [.resume, .validators, .challenges]
    }

    /// The executable name looked up on `PATH` for `scheme`: `paperboy-transport-SCHEME`.
    public static func executableName(for scheme: String) -> String { "paperboy-transport-\(scheme.lowercased())" }

    /// The transport for `scheme` if an executable `paperboy-transport-SCHEME` is on `searchPath`.
    ///
    /// - Parameters:
    ///   - searchPath: folders separated by `:` (default: this process's `PATH`).
    ///   - environment: the helper's environment (default: this process's); leave out variables
    ///     holding secrets (`PaperboyConfiguration.childEnvironment(from:)` does).
    ///   - maxIdleHelpers, keepAlive, clock: as in ``init(scheme:command:schemes:capabilities:environment:maxIdleHelpers:keepAlive:terminationGrace:clock:logger:)``.
    public static func discover(
        scheme: String, searchPath: String? = nil, environment: [String: String]? = nil,
        maxIdleHelpers: Int = 4, keepAlive: Duration = .seconds(30), clock: any LibraryClock = SystemClock(),
        logger: Logger = Logger(label: "paperboy.exec")
    ) -> ExecTransport? {
        let path = searchPath ?? ProcessInfo.processInfo.environment["PATH"]
        guard let executable = HelperProcess.resolve(executableName(for: scheme), searchPath: path) else { return nil }
        return ExecTransport(scheme: scheme, command: [executable], environment: environment, maxIdleHelpers: maxIdleHelpers,
                             keepAlive: keepAlive, clock: clock, logger: logger)
    }

    /// The pids of this transport's helpers that are running (busy or idle), for tests and diagnostics.
    public var helperProcessIDs: [Int32] { pool.livePIDs }

    /// Stops the helpers kept for later transfers (they get end of input and exit).
    public func retireIdleHelpers() { pool.retireIdle() }

    public func transfer(_ job: TransferJob, into sink: any TransferSink) async throws {
        try Task.checkCancellation()
        let origin = HelperPool.origin(of: job.url)
        var attempt = 0
        while true {
            attempt += 1
            let reused = pool.takeIdle(for: origin)
            let helper: HelperProcess
            if let reused { helper = reused } else { helper = try await started(job) }
            let conversation = Conversation(job: job, helper: helper, sink: sink, grace: pool.grace)
            do {
                let reusable = try await withTaskCancellationHandler {
                    try await conversation.run()
                } onCancel: {
                    helper.abandon()
                }
                pool.release(helper, origin: origin, reusable: reusable)
                return
            } catch let failure as Conversation.Failure {
                pool.release(helper, origin: origin, reusable: failure.reusable)
                // A kept helper may have exited while idle: one fresh helper gets a second chance.
                if failure.staleHelper, reused != nil, attempt == 1 { continue }
                throw await failure.error(describing: helper, grace: pool.grace)
            } catch {
                pool.stop(helper)
                throw error
            }
        }
    }

    /// Starts a helper and completes the handshake.
    private func started(_ job: TransferJob) async throws -> HelperProcess {
        let helper: HelperProcess
        do {
            helper = try await pool.launch()
        } catch let error as HelperLaunchError {
            throw TransportError(
                .connectionFailed, "cannot start transport helper '\(error.name)': \(error.reason)", url: job.url, isRetryable: false)
        }
        do {
            try await withTaskCancellationHandler {
                try await Handshake(helper: helper, job: job).run()
            } onCancel: {
                helper.abandon()
            }
            return helper
        } catch let failure as Conversation.Failure {
            pool.stop(helper)
            throw await failure.error(describing: helper, grace: pool.grace)
        } catch {
            pool.stop(helper)
            throw error
        }
    }
}

extension Transport where Self == ExecTransport {
    /// An ``ExecTransport``, for registries written as lists: `TransportRegistry([.exec(scheme: "tree", command: […])])`.
    public static func exec(scheme: String, command: [String]) -> ExecTransport {
        ExecTransport(scheme: scheme, command: command)
    }
}
