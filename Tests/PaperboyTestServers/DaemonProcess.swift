#if canImport(Glibc)
import Glibc
#endif
import Foundation
import PaperboyDaemon
import PaperboyWire
import PaperboyTesting

/// A `paperboy daemon` process started by a test, stopped by PID (killed when released).
public final class DaemonProcess: Sendable {
    public let process: ChildProcess
    /// Where clients connect.
    public let socket: URL
    /// The daemon's standard error (its log).
    public let log: URL

    /// Starts the daemon on `config` with `XDG_RUNTIME_DIR` set to `runtime`, and waits until its
    /// socket accepts connections (or, activated, until it logs that it serves).
    ///
    /// - Throws: ``TimedOut`` with the daemon's log when it does not listen within 60 s, or
    ///   ``ServerError`` when it exits first.
    ///
    /// - Parameters:
    ///   - environment: more variables for the daemon.
    ///   - listening: a listening socket the daemon gets as descriptor 3 with `LISTEN_FDS=1` and
    ///     `LISTEN_PID` set to its own PID (systemd socket activation, through `sh -c … exec`);
    ///     `socket` is then its path.
    public init(config: URL, runtime: URL, log: URL, environment extra: [String: String] = [:],
                listening: (fd: Int32, path: URL)? = nil) async throws {
        // One of the processes the tests start at once, until it listens (``ProcessSlots``).
        try await ProcessSlots.shared.acquire()
        defer { ProcessSlots.shared.release() }
        var environment = ProcessInfo.processInfo.environment
        environment["XDG_RUNTIME_DIR"] = runtime.path
        environment["PAPERBOY_NETWORK"] = "wired"
        environment.merge(extra) { $1 }
        let fd = open(log.path, O_WRONLY | O_CREAT | O_APPEND, 0o600)
        defer { close(fd) }
        let paperboy = ProcessInfo.processInfo.environment["PAPERBOY_BIN"] ?? BuiltExecutable.url(named: "paperboy").path
        let arguments = ["daemon", "-v", "--config", config.path]
        if let listening {
            environment["LISTEN_FDS"] = "1"
            // The shell's PID is the daemon's once it execs.
            process = try ChildProcess("/bin/sh", ["-c", "LISTEN_PID=$$ exec \"$0\" \"$@\"", paperboy] + arguments,
                                       environment: environment, standardError: fd, passing: listening.fd)
            socket = listening.path
        } else {
            process = try ChildProcess(paperboy, arguments, environment: environment, standardError: fd)
            socket = runtime.appendingPathComponent("paperboy/daemon.sock")
        }
        self.log = log
        ServerReaper.track(process.processIdentifier)
        let (process, socket, activated) = (process, socket, listening != nil)
        let said = { (try? String(contentsOf: log, encoding: .utf8)) ?? "" }
        try await eventually("the daemon to listen on \(socket.path)", timeout: .seconds(60), seen: "its log: \(said())") {
            guard process.isRunning else {
                throw ServerError("the daemon exited before it listened on \(socket.path): \(said())")
            }
            if activated { return said().contains("serving") }
            let probe = try DaemonSocket.connect(to: socket)
            if probe >= 0 { close(probe) }
            return probe >= 0
        }
    }

    /// Sends `signal` and waits for the daemon to exit; returns the wall time that took, to print
    /// (a test does not bound it: `Benchmarks/bandwidth/run.py --daemon` measures SIGTERM to exit).
    ///
    /// A daemon that has not exited once a wait budget of 60 s is spent hangs: it is killed
    /// (SIGKILL), so a test that asks `process.terminationReason` sees that it did not stop by itself.
    public func stop(_ signal: Int32 = SIGTERM) async -> Duration {
        let start = ContinuousClock.now
        process.signal(signal)
        let hang = Task { [process] in
            guard (try? await WaitBudget.spend(.seconds(60))) != nil, !Task.isCancelled else { return }
            process.signal(SIGKILL)
        }
        await process.exited()
        hang.cancel()
        ServerReaper.untrack(process.processIdentifier)
        return ContinuousClock.now - start
    }

    deinit {
        process.signal(SIGKILL)
    }
}
