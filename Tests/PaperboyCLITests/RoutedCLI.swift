#if canImport(Glibc)
import Glibc
#endif
import Foundation
import PaperboyTestServers
import PaperboyTesting
import Testing

/// How a command reaches its library: it opens the library itself, or a daemon started on the
/// same configuration serves it (issue 27: every CLI test passes both ways).
enum CLIRoute: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case inProcess
    case daemon

    var testDescription: String { rawValue }
}

/// Runs `paperboy` commands on a configuration by a route. Both ways the commands see the same
/// environment (`XDG_RUNTIME_DIR` a private runtime folder of the workspace, a wired network);
/// through ``CLIRoute/daemon`` a daemon started on the configuration holds the library (and its
/// lock: a command that opened the library itself would fail), killed by ``stop()``.
final class RoutedCLI: @unchecked Sendable {
    let route: CLIRoute
    let runtime: URL
    private let log: URL
    /// More variables for the daemon (not for the commands).
    private let daemonEnvironment: [String: String]
    private(set) var daemon: DaemonProcess?

    init(_ route: CLIRoute, workspace: Workspace, daemonEnvironment: [String: String] = [:]) {
        self.route = route
        self.daemonEnvironment = daemonEnvironment
        runtime = workspace.path("runtime")
        log = workspace.path("daemon.log")
        mkdir(runtime.path, 0o700)
    }

    /// Starts the daemon on `config` (through ``CLIRoute/daemon``, once).
    func start(_ config: URL) async throws {
        guard route == .daemon, daemon == nil else { return }
        daemon = try await DaemonProcess(config: config, runtime: runtime, log: log, environment: daemonEnvironment)
    }

    /// Runs the command (after ``start(_:)`` with the configuration given by `--config`).
    func run(_ arguments: [String], in folder: URL? = nil) async throws -> CLIResult {
        try await startForConfig(in: arguments)
        return try await CLI.run(arguments, in: folder, environment: environment)
    }

    /// Runs the command on a pseudo-terminal (``CLI/runOnTerminal(_:in:environment:)``).
    func runOnTerminal(_ arguments: [String], in folder: URL? = nil) async throws -> CLIResult {
        try await startForConfig(in: arguments)
        return try await CLI.runOnTerminal(arguments, in: folder, environment: environment)
    }

    private var environment: [String: String] { ["XDG_RUNTIME_DIR": runtime.path, "PAPERBOY_NETWORK": "wired"] }

    private func startForConfig(in arguments: [String]) async throws {
        if let index = arguments.firstIndex(of: "--config"), index + 1 < arguments.count {
            try await start(URL(fileURLWithPath: arguments[index + 1]))
        }
    }

    func stop() {
        daemon?.process.signal(SIGKILL)
    }
}
