#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Paperboy
import PaperboyClient
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

    /// Starts the daemon on `config`'s library-wide settings: the file without its `[[issues]]`
    /// and `[[feeds]]` (those are the commands' to add; a daemon given them would download them
    /// itself before a command plans), written next to it as `daemon.toml` so that its relative
    /// paths and hooks' folder are the same.
    func start(libraryWideOf config: URL) async throws {
        guard route == .daemon, daemon == nil else { return }
        let text = try String(contentsOf: config, encoding: .utf8)
        let daemonConfig = config.deletingLastPathComponent().appendingPathComponent("daemon.toml")
        try Self.libraryWide(text).write(to: daemonConfig, atomically: true, encoding: .utf8)
        try await start(daemonConfig)
    }

    /// `text` (a configuration) without its `[[issues]]` and `[[feeds]]` tables.
    static func libraryWide(_ text: String) -> String {
        var kept: [Substring] = []
        var skipping = false
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            let header = line.drop { $0 == " " || $0 == "\t" }
            if header.hasPrefix("[") {
                skipping = header.hasPrefix("[[issues") || header.hasPrefix("[[feeds")
            }
            if !skipping { kept.append(line) }
        }
        return kept.joined(separator: "\n")
    }

    /// Runs the command (after ``start(_:)`` with the configuration given by `--config`), with
    /// `environment` added to the command's (not the daemon's: see `daemonEnvironment`).
    func run(_ arguments: [String], in folder: URL? = nil, environment extra: [String: String] = [:]) async throws -> CLIResult {
        try await startForConfig(in: arguments)
        do {
            return try await CLI.run(arguments, in: folder, environment: environment.merging(extra) { $1 })
        } catch let error as CLIError where daemon != nil {
            // A command that hung through a daemon: what the daemon logged says why.
            throw CLIError("\(error.description)\ndaemon log: \(daemonLog.suffix(8000))")
        }
    }

    /// Runs the command on a pseudo-terminal (``CLI/runOnTerminal(_:in:environment:)``).
    func runOnTerminal(_ arguments: [String], in folder: URL? = nil) async throws -> CLIResult {
        try await startForConfig(in: arguments)
        return try await CLI.runOnTerminal(arguments, in: folder, environment: environment)
    }

    /// Has the daemon read its configuration again (`RELOAD`, answered once it applies), after
    /// a test rewrote it; nothing in process.
    func reload() async throws {
        guard let daemon else { return }
        let client = try await Library.connect(socket: daemon.socket)
        defer { client.disconnect() }
        _ = try await client.daemon?.reload()
    }

    /// What the daemon logged so far (empty in process).
    var daemonLog: String {
        guard daemon != nil else { return "" }
        return (try? String(contentsOf: log, encoding: .utf8)) ?? ""
    }

    /// What the commands' environment has on top of the test's (for a test that starts them itself).
    var environment: [String: String] { ["XDG_RUNTIME_DIR": runtime.path, "PAPERBOY_NETWORK": "wired"] }

    private func startForConfig(in arguments: [String]) async throws {
        if let index = arguments.firstIndex(of: "--config"), index + 1 < arguments.count {
            try await start(URL(fileURLWithPath: arguments[index + 1]))
        }
    }

    func stop() {
        daemon?.process.signal(SIGKILL)
    }
}
