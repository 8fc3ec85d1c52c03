#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CPaperboySystem
import Foundation
import Logging
import Paperboy
import PaperboyFraming
import Synchronization

/// How a helper process ended.
enum HelperExit: Sendable, Equatable, CustomStringConvertible {
    case exited(Int32)
    case signalled(Int32)

    var description: String {
        switch self {
        case .exited(let status): return "exited with status \(status)"
        case .signalled(let signal):
            let name = String(cString: strsignal(signal))
            return "was killed by signal \(signal) (\(name))"
        }
    }
}

/// One running helper executable: its pipes, the thread doing its blocking I/O, the thread
/// draining its stderr, and the thread reaping it.
final class HelperProcess: @unchecked Sendable {
    /// The executable's name, for messages.
    let name: String
    let pid: pid_t
    private let input: Int32
    private let output: Int32
    private let io: WorkerThread
    /// Only touched by jobs on `io` (one at a time).
    private var reader = FrameReader()
    private let abandoned = Atomic<Bool>(false)
    private let lifecycle: Lifecycle
    private let stderr: StderrTail
    /// Where the timeouts and the termination grace are measured (the transport's clock).
    let clock: any LibraryClock
    /// The helper's `HELLO`, once the handshake succeeded.
    let hello = Mutex<HelperHello?>(nil)

    private init(name: String, pid: pid_t, input: Int32, output: Int32, errors: Int32, clock: any LibraryClock, logger: Logger) {
        self.name = name
        self.pid = pid
        self.input = input
        self.output = output
        self.clock = clock
        io = WorkerThread(name: "paperboy-exec-io-\(pid)", blocksSIGPIPE: true)
        let lifecycle = Lifecycle(pid: pid)
        self.lifecycle = lifecycle
        stderr = StderrTail()
        let tail = stderr
        let drain = Thread {
            tail.drain(errors, name: name, pid: pid, logger: logger)
        }
        drain.name = "paperboy-exec-stderr-\(pid)"
        drain.stackSize = 256 * 1024
        drain.start()
        let reaper = Thread { lifecycle.reap() }
        reaper.name = "paperboy-exec-reaper-\(pid)"
        reaper.stackSize = 128 * 1024
        reaper.start()
    }

    /// Starts `command` (resolved against `PATH` when its first word has no `/`).
    ///
    /// - Throws: ``HelperLaunchError`` when the executable cannot be found or started.
    static func launch(command: [String], environment: [String: String], clock: any LibraryClock,
                       logger: Logger) async throws -> HelperProcess {
        let name = (command.first.map { ($0 as NSString).lastPathComponent }) ?? "?"
        guard let program = command.first, !program.isEmpty else {
            throw HelperLaunchError(name: name, reason: "the command is empty")
        }
        guard let path = resolve(program, searchPath: environment["PATH"]) else {
            let reason = program.contains("/") ? "\(program) is not an executable file" : "\(program) was not found on PATH"
            throw HelperLaunchError(name: name, reason: reason)
        }
        let (pid, input, output, errors) = try await Spawner.shared.spawn(
            path: path, arguments: command, environment: environment, name: name)
        return HelperProcess(name: name, pid: pid, input: input, output: output, errors: errors, clock: clock, logger: logger)
    }

    /// The full path of `program`: as is when it contains a `/`, else the first match on `searchPath`.
    static func resolve(_ program: String, searchPath: String?) -> String? {
        if program.contains("/") {
            return access(program, X_OK) == 0 ? program : nil
        }
        let folders = (searchPath ?? "/usr/local/bin:/usr/bin:/bin").split(separator: ":", omittingEmptySubsequences: false)
        for folder in folders {
            let candidate = (folder.isEmpty ? "." : String(folder)) + "/" + program
            var info = stat()
            if stat(candidate, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG, access(candidate, X_OK) == 0 {
                return candidate
            }
        }
        return nil
    }

    // MARK: Talking

    /// Writes one frame, waiting at most `timeout` (on ``clock``) for the helper to make room.
    func send(_ frame: Data, timeout: Duration) async throws {
        let fd = input
        let abandoned = self.abandonedFlag
        let clock = self.clock
        try await io.run {
            try FrameWriter.write(frame, to: fd, timeout: timeout, clock: clock, abandoned: abandoned)
        }
    }

    /// Reads the next frame; `idleTimeout` (on ``clock``) bounds the wait for each byte.
    func receive(idleTimeout: Duration) async throws -> Frame {
        let fd = output
        let abandoned = self.abandonedFlag
        let clock = self.clock
        return try await io.run { [self] in
            try reader.next(from: fd, idleTimeout: idleTimeout, clock: clock, abandoned: abandoned)
        }
    }

    private var abandonedFlag: @Sendable () -> Bool { { [self] in abandoned.load(ordering: .relaxed) } }

    // MARK: Lifecycle

    /// Whether the helper has exited (it is reaped by then).
    var exit: HelperExit? { lifecycle.exit }

    /// The last lines the helper wrote to stderr, trimmed.
    var stderrTail: String { stderr.text }

    /// Waits up to `timeout` (on ``clock``) for the helper's stderr to end (see ``StderrTail``).
    func waitForStderrEnd(timeout: Duration) async { await stderr.waitForEnd(timeout: timeout, clock: clock) }

    /// Waits until the helper exits, at most `timeout` (on ``clock``).
    @discardableResult
    func waitForExit(timeout: Duration) async -> HelperExit? {
        await lifecycle.wait(timeout: timeout, clock: clock)
    }

    /// Stops the helper: pending I/O is abandoned and its stdin closed at once; then SIGTERM to
    /// its process group (after `grace` when `graceful`, giving it time to exit on EOF), and
    /// SIGKILL `grace` later if it is still there. The grace is measured on ``clock``, and the
    /// timer ends as soon as the helper exits. Its descriptors and threads are released once it
    /// exited and the I/O queued before is done.
    func shutdown(graceful: Bool, grace: Duration) {
        guard lifecycle.beginShutdown() else { return }
        if !graceful { abandoned.store(true, ordering: .relaxed) }
        let input = self.input
        io.enqueue { Glibc.close(input) }
        let lifecycle = self.lifecycle
        let output = self.output
        let io = self.io
        lifecycle.whenExited {
            io.enqueue { Glibc.close(output) }
            io.stop()
        }
        if !graceful { lifecycle.signal(SIGTERM) }
        let clock = self.clock
        let escalation = Task {
            if graceful {
                try await clock.sleep(for: grace)
                lifecycle.signal(SIGTERM)
            }
            try await clock.sleep(for: grace)
            lifecycle.signal(SIGKILL)
        }
        lifecycle.whenExited { escalation.cancel() }
    }

    /// Makes the read or write in progress give up within a tenth of a second (for cancellation).
    func abandon() { abandoned.store(true, ordering: .relaxed) }
}

/// Why a helper could not be started.
struct HelperLaunchError: Error, Sendable {
    var name: String
    var reason: String
}

/// A helper's exit, observed without a race against pid reuse: the reaper waits without
/// reaping (`WNOWAIT`), records the exit under the lock, and only then reaps; signals are sent
/// under the same lock and only while the helper is not recorded as exited.
final class Lifecycle: Sendable {
    private struct State {
        var exit: HelperExit?
        var shuttingDown = false
        var waiters: [Int: CheckedContinuation<HelperExit?, Never>] = [:]
        var nextWaiter = 0
        var onExit: [@Sendable () -> Void] = []
    }

    let pid: pid_t
    private let state = Mutex<State>(State())

    init(pid: pid_t) { self.pid = pid }

    var exit: HelperExit? { state.withLock { $0.exit } }

    /// Blocks until the helper exits, then records and reaps it. Runs on its own thread.
    func reap() {
        var info = siginfo_t()
        while waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT) != 0, errno == EINTR {}
        var status: Int32 = 0
        let (waiters, callbacks) = state.withLock { state -> ([CheckedContinuation<HelperExit?, Never>], [@Sendable () -> Void]) in
            while waitpid(pid, &status, 0) < 0, errno == EINTR {}
            let signalled = status & 0x7F
            state.exit = signalled == 0 ? .exited((status >> 8) & 0xFF) : .signalled(signalled)
            defer {
                state.waiters = [:]
                state.onExit = []
            }
            return (Array(state.waiters.values), state.onExit)
        }
        let exit = self.exit
        for waiter in waiters { waiter.resume(returning: exit) }
        for callback in callbacks { callback() }
    }

    /// Sends `signal` to the helper's process group, unless it already exited.
    func signal(_ signal: Int32) {
        state.withLock { state in
            guard state.exit == nil else { return }
            if kill(-pid, signal) != 0 { kill(pid, signal) }
        }
    }

    /// Marks the start of a shutdown; `false` if one already began.
    func beginShutdown() -> Bool {
        state.withLock { state in
            defer { state.shuttingDown = true }
            return !state.shuttingDown
        }
    }

    /// Runs `callback` once the helper exited (at once if it has).
    func whenExited(_ callback: @escaping @Sendable () -> Void) {
        let now = state.withLock { state -> Bool in
            if state.exit == nil { state.onExit.append(callback) }
            return state.exit != nil
        }
        if now { callback() }
    }

    /// Waits until the helper exits, at most `timeout` on `clock`; `nil` when it did not.
    func wait(timeout: Duration, clock: any LibraryClock) async -> HelperExit? {
        var timer: Task<Void, Never>?
        defer { timer?.cancel() }
        return await withCheckedContinuation { (continuation: CheckedContinuation<HelperExit?, Never>) in
            let (id, exit) = state.withLock { state -> (Int, HelperExit?) in
                state.nextWaiter += 1
                if state.exit == nil { state.waiters[state.nextWaiter] = continuation }
                return (state.nextWaiter, state.exit)
            }
            if let exit { return continuation.resume(returning: exit) }
            timer = Task { [self] in
                guard (try? await clock.sleep(for: timeout)) != nil else { return }
                state.withLock { $0.waiters.removeValue(forKey: id) }?.resume(returning: nil)
            }
        }
    }
}

/// Drains a helper's stderr into the log, keeping the last few kilobytes for error messages.
final class StderrTail: Sendable {
    private static let keep = 4096
    private let bytes = Mutex<[UInt8]>([])
    /// Whether the helper's stderr reached end of file (it exited, or closed it), and who waits for it.
    private let end = Mutex<(ended: Bool, waiters: [Int: CheckedContinuation<Void, Never>])>((false, [:]))
    private let nextWaiter = Atomic<Int>(0)

    /// Waits up to `timeout` (on `clock`) for the end of the helper's stderr, so that a crash
    /// report quotes its last words (they may still be in the pipe when its exit is noticed).
    func waitForEnd(timeout: Duration, clock: any LibraryClock) async {
        let id = nextWaiter.add(1, ordering: .relaxed).oldValue
        var timer: Task<Void, Never>?
        defer { timer?.cancel() }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let ended = end.withLock { end -> Bool in
                if !end.ended { end.waiters[id] = continuation }
                return end.ended
            }
            if ended { return continuation.resume() }
            timer = Task { [self] in
                guard (try? await clock.sleep(for: timeout)) != nil else { return }
                end.withLock { $0.waiters.removeValue(forKey: id) }?.resume()
            }
        }
    }

    /// The kept tail: its last five non-empty lines, joined with " | ".
    var text: String {
        let kept = bytes.withLock { $0 }
        let lines = String(decoding: kept, as: UTF8.self)
            .split(whereSeparator: \.isNewline)
            .map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty }
        return TerminalText.escape(lines.suffix(5).joined(separator: " | "))
    }

    /// Reads `fd` until end of file (runs on its own thread), then closes it.
    func drain(_ fd: Int32, name: String, pid: pid_t, logger: Logger) {
        var buffer = [UInt8](repeating: 0, count: 4096)
        var line: [UInt8] = []
        while true {
            let got = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if got < 0, errno == EINTR { continue }
            if got <= 0 { break }
            let chunk = buffer[0..<got]
            bytes.withLock { kept in
                kept.append(contentsOf: chunk)
                if kept.count > Self.keep { kept.removeFirst(kept.count - Self.keep) }
            }
            for byte in chunk {
                if byte == UInt8(ascii: "\n") {
                    logger.info("\(name)[\(pid)]: \(TerminalText.escape(String(decoding: line, as: UTF8.self)))")
                    line.removeAll(keepingCapacity: true)
                } else if line.count < 4096 {
                    line.append(byte)
                }
            }
        }
        if !line.isEmpty { logger.info("\(name)[\(pid)]: \(TerminalText.escape(String(decoding: line, as: UTF8.self)))") }
        close(fd)
        let waiters = end.withLock { end in
            end.ended = true
            defer { end.waiters = [:] }
            return Array(end.waiters.values)
        }
        for waiter in waiters { waiter.resume() }
    }
}

/// Starts every helper from one thread that lives as long as the process: Linux delivers
/// PR_SET_PDEATHSIG when the spawning *thread* ends, so spawning from a pool thread that later
/// exits would kill healthy helpers.
final class Spawner: Sendable {
    static let shared = Spawner()
    private let thread = WorkerThread(name: "paperboy-exec-spawner", stackSize: 256 * 1024)

    /// Starts `path`; returns its pid and the core's ends of its stdin, stdout and stderr.
    func spawn(path: String, arguments: [String], environment: [String: String], name: String)
        async throws -> (pid: pid_t, input: Int32, output: Int32, errors: Int32)
    {
        try await thread.run {
            var pipes: [[Int32]] = []
            defer {
                // The child's ends are only needed until it has them.
                for (index, pipe) in pipes.enumerated() { close(index == 0 ? pipe[0] : pipe[1]) }
            }
            for _ in 0..<3 {
                var fds: [Int32] = [-1, -1]
                let failure = paperboy_pipe_cloexec(&fds)
                if failure != 0 {
                    for (index, pipe) in pipes.enumerated() { close(index == 0 ? pipe[1] : pipe[0]) }
                    throw HelperLaunchError(name: name, reason: "cannot create a pipe: \(SystemFailure.reason(failure))")
                }
                pipes.append(fds)
            }
            let argv = arguments.map { strdup($0) } + [nil]
            let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
            defer {
                argv.forEach { free($0) }
                envp.forEach { free($0) }
            }
            var pid: pid_t = 0
            var failure = paperboy_spawn(path, argv, envp, nil, pipes[0][0], pipes[1][1], pipes[2][1], &pid)
            // A helper written just now may still be open for writing in a child another thread
            // forked meanwhile (until that child execs): wait a little, as Go's os/exec does.
            var tries = 0
            while failure == ETXTBSY, tries < 20 {
                tries += 1
                usleep(5000)
                failure = paperboy_spawn(path, argv, envp, nil, pipes[0][0], pipes[1][1], pipes[2][1], &pid)
            }
            if failure != 0 {
                for (index, pipe) in pipes.enumerated() { close(index == 0 ? pipe[1] : pipe[0]) }
                throw HelperLaunchError(name: name, reason: SystemFailure.message("cannot run", path, code: failure))
            }
            return (pid, pipes[0][1], pipes[1][0], pipes[2][0])
        }
    }
}

extension Duration {
    var timeInterval: TimeInterval {
        let (seconds, attoseconds) = components
        return TimeInterval(seconds) + TimeInterval(attoseconds) / 1e18
    }

}
