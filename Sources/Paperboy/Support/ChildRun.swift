import CPaperboySystem
import Foundation

/// A program run to its end from the calling thread, without Foundation's `Process` (whose
/// `run()` lists `/proc/self/fd` and now and then crashed the calling process,
/// swift-corelibs-foundation#5472): hooks and probes that the engine starts.
///
/// The child leads its own process group, gets `/dev/null` as standard input, and is killed if
/// the thread that started it ends first (see `paperboy_spawn`); a timeout sends SIGTERM to the
/// whole group, then SIGKILL after a grace period. Blocks the calling thread: call it from a
/// thread of its own, never the cooperative pool.
package struct ChildRun: Sendable {
    /// How a run ended.
    package enum Ending: Equatable, Sendable {
        /// The program exited with this status.
        case exited(Int32)
        /// A signal ended it.
        case signalled(Int32)
        /// It ran past the timeout and was stopped (SIGTERM, then SIGKILL).
        case timedOut
        /// It could not be started (the message says why: no such file, permission…).
        case couldNotStart(String)
    }

    /// The program: a path (absolute, or relative to `folder`), or a bare name looked up in
    /// `PATH` through `/usr/bin/env`.
    package var executable: String
    package var arguments: [String] = []
    /// The child's whole environment (nothing is inherited beyond it).
    package var environment: [String: String]
    /// The child's working folder (default: this process's).
    package var folder: URL?
    /// How long it may run; nil: no limit.
    package var timeout: Duration?
    /// Keeps the first this many bytes of standard output (0: output goes to `/dev/null`, or
    /// to this process's with `inheritsOutput`).
    package var outputLimit = 0
    /// Whether the child writes to this process's standard error (and output, when not kept).
    package var inheritsOutput = false
    /// Where the timeout is measured: the run polls its ``LibraryClock/uptime`` (a test's clock
    /// makes the stop the test's to time).
    package var clock: any LibraryClock

    package init(_ executable: String, _ arguments: [String] = [], environment: [String: String], folder: URL? = nil,
                 timeout: Duration? = nil, outputLimit: Int = 0, inheritsOutput: Bool = false,
                 clock: any LibraryClock = SystemClock()) {
        self.executable = executable
        self.arguments = arguments
        self.environment = environment
        self.folder = folder
        self.timeout = timeout
        self.outputLimit = outputLimit
        self.inheritsOutput = inheritsOutput
        self.clock = clock
    }

    /// When a run past its timeout is signalled: SIGTERM to the group at the deadline, SIGKILL
    /// a grace period later (a tenth of the timeout, between 100 ms and 5 s).
    package struct Stopping: Sendable, Equatable {
        /// When SIGTERM is due, in the clock's uptime.
        package let deadline: Duration
        /// How long after SIGTERM the group gets SIGKILL.
        package let grace: Duration
        /// The signals sent so far.
        package private(set) var sent: [Int32] = []

        /// A run started at `start` (uptime) with `timeout`.
        package init(start: Duration, timeout: Duration) {
            deadline = start + timeout
            grace = min(max(timeout / 10, .milliseconds(100)), .seconds(5))
        }

        /// The signal due at `now` that was not sent yet, if any; it counts as sent.
        package mutating func signalDue(at now: Duration) -> Int32? {
            if sent.isEmpty, now >= deadline {
                sent.append(SIGTERM)
                return SIGTERM
            }
            if sent == [SIGTERM], now >= deadline + grace {
                sent.append(SIGKILL)
                return SIGKILL
            }
            return nil
        }
    }

    /// Runs the program to its end: how it ended, and the standard output kept.
    package func run() -> (ending: Ending, output: Data) {
        let (path, argv0) = resolved()
        var pipe: [Int32] = [-1, -1]
        if outputLimit > 0 {
            let failure = paperboy_pipe_cloexec(&pipe)
            guard failure == 0 else { return (.couldNotStart("cannot create a pipe: \(SystemFailure.reason(failure))"), Data()) }
        }
        let null = open("/dev/null", O_RDWR | O_CLOEXEC)
        defer { if null >= 0 { close(null) } }
        guard null >= 0 else { return (.couldNotStart("cannot open /dev/null: \(SystemFailure.reason())"), Data()) }
        let argv = (argv0 + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var pid: pid_t = 0
        // The timeout counts from before the child exists: read once the poll began, a thread
        // held up after the spawn (a loaded machine) moved the deadline later.
        let started = clock.uptime
        let out = outputLimit > 0 ? pipe[1] : inheritsOutput ? STDOUT_FILENO : null
        let failure = paperboy_spawn(path, argv, envp, folder?.path, null, out, inheritsOutput ? STDERR_FILENO : null, &pid)
        if outputLimit > 0 { close(pipe[1]) }
        guard failure == 0 else {
            if outputLimit > 0 { close(pipe[0]) }
            return (.couldNotStart("\(path): \(SystemFailure.reason(failure))"), Data())
        }
        var output = Data()
        let ending = wait(for: pid, startedAt: started, reading: outputLimit > 0 ? pipe[0] : -1, into: &output)
        if outputLimit > 0 { close(pipe[0]) }
        return (ending, output)
    }

    /// The path to exec and the leading arguments.
    private func resolved() -> (path: String, argv0: [String]) {
        guard executable.contains("/") else { return ("/usr/bin/env", ["env", executable]) }
        guard !executable.hasPrefix("/"), let folder else { return (executable, [executable]) }
        let path = folder.appendingPathComponent(executable).standardizedFileURL.path
        return (path, [path])
    }

    /// Polls the child every 5 ms (reading its output meanwhile) until it ends, stopping it at
    /// the timeout (see ``Stopping``), counted from `started`, as the clock tells it.
    private func wait(for pid: pid_t, startedAt started: Duration, reading fd: Int32, into output: inout Data) -> Ending {
        if fd >= 0 { _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) }
        var stopping = timeout.map { Stopping(start: started, timeout: $0) }
        var status: Int32 = 0
        var buffer = [UInt8](repeating: 0, count: 4096)
        func drain() {
            guard fd >= 0 else { return }
            while true {
                let got = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                guard got > 0 else { return }
                let room = max(0, outputLimit - output.count)
                output.append(contentsOf: buffer.prefix(min(got, room)))
            }
        }
        while true {
            drain()
            let reaped = waitpid(pid, &status, WNOHANG)
            if reaped == pid { break }
            if reaped < 0, errno != EINTR { return .exited(-1) }
            if let signal = stopping?.signalDue(at: clock.uptime) { kill(-pid, signal) }
            // The poll's period, not a decision: the clock above decides when to stop the child.
            usleep(5_000)
        }
        drain()
        if stopping?.sent.isEmpty == false {
            // The group outlives its leader while a child is left in it: that child goes too.
            kill(-pid, SIGKILL)
            return .timedOut
        }
        let signal = status & 0x7F
        return signal != 0 && signal != 0x7F ? .signalled(signal) : .exited((status >> 8) & 0xFF)
    }
}
