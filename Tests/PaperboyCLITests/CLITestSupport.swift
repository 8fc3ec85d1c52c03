import Dispatch
import Foundation
import Synchronization
import PaperboyTestServers
import PaperboyTesting
import Testing

/// Runs the built `paperboy` tool and captures what it printed.
struct CLIResult {
    var status: Int32
    var stdout: String
    var stderr: String
}

enum CLI {
    /// The `paperboy` executable next to the test bundle (or `PAPERBOY_BIN`).
    static var executable: URL {
        if let override = ProcessInfo.processInfo.environment["PAPERBOY_BIN"] {
            return URL(fileURLWithPath: override)
        }
        return BuiltExecutable.url(named: "paperboy")
    }

    /// Runs the tool on a thread of its own, so that waiting never blocks the cooperative pool
    /// (other tests' sleeps and timeouts stay punctual).
    static func run(_ arguments: [String], in folder: URL? = nil, environment: [String: String] = [:],
                    executable: URL? = nil) async throws -> CLIResult {
        let executable = executable ?? self.executable
        // One of the processes the tests run at once (``ProcessSlots``).
        return try await ProcessSlots.shared.holding {
            try await withCheckedThrowingContinuation { continuation in
                Thread {
                    continuation.resume(with: Result {
                        try runBlocking(executable, arguments, in: folder, environment: environment)
                    })
                }.start()
            }
        }
    }

    /// Runs `paperboy` on a pseudo-terminal (through python3's `pty`): standard output and error
    /// both go to the terminal, and come back together in `stdout`.
    static func runOnTerminal(_ arguments: [String], in folder: URL? = nil, environment: [String: String] = [:]) async throws -> CLIResult {
        let script = """
            import os, pty, sys
            pid, fd = pty.fork()
            if pid == 0:
                os.execv(sys.argv[1], sys.argv[1:])
            out = b""
            while True:
                try:
                    data = os.read(fd, 65536)
                except OSError:
                    break
                if not data:
                    break
                out += data
            _, status = os.waitpid(pid, 0)
            sys.stdout.buffer.write(out)
            sys.exit(os.waitstatus_to_exitcode(status))
            """
        return try await run(["-c", script, executable.path] + arguments, in: folder, environment: environment, executable: python3)
    }

    /// python3, for pseudo-terminals and zip archives made to measure.
    static let python3 = URL(fileURLWithPath: "/usr/bin/python3")

    /// Runs `paperboy` and sends it SIGKILL `delay` microseconds after `ready` holds (at once
    /// when there is none): a random kill point, timed from a thread of its own so that it is
    /// punctual even when the test pool is busy. Returns the process once it has exited.
    ///
    /// - Parameter ready: the event the kill point is counted from (the run wrote its first
    ///   bytes, say), checked every few milliseconds; a run that exits first is not killed.
    static func runKilled(_ arguments: [String], after delay: useconds_t, once ready: (@Sendable () -> Bool)? = nil,
                          environment: [String: String] = [:], standardError: FileHandle = .nullDevice) async throws -> ChildProcess {
        let process = try ChildProcess(
            executable.path, arguments, environment: ProcessInfo.processInfo.environment.merging(environment) { $1 },
            standardError: standardError.fileDescriptor)
        // The wait for `ready` is on the killer's thread too: a test pool busy for seconds must not
        // let the run finish before its kill point is even noticed.
        let deadline = ContinuousClock.now + .seconds(60)
        let missed = Atomic<Bool>(false)
        Thread {
            if let ready {
                while !ready(), process.isRunning {
                    if ContinuousClock.now > deadline {
                        missed.store(true, ordering: .relaxed)
                        break
                    }
                    usleep(1_000)   // the killer's own thread, polling the run's files
                }
            }
            usleep(delay)
            process.signal(SIGKILL)
        }.start()
        await process.exited()
        if missed.load(ordering: .relaxed) {
            throw TimedOut("paperboy \(arguments.first ?? "") was not ready for its kill point within 60 s")
        }
        return process
    }

    /// The length of the largest partial file in `library`'s `.partial` folder (0 when there is none).
    static func partialBytes(in library: URL) -> Int {
        let folder = library.appendingPathComponent(".partial")
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
        return names.compactMap { name in
            (try? FileManager.default.attributesOfItem(atPath: folder.appendingPathComponent(name).path)[.size]) as? Int
        }.max() ?? 0
    }

    /// Waits for a process on a thread of its own.
    static func waitForExit(_ process: ChildProcess) async {
        await process.exited()
    }

    /// Started with `posix_spawn` (``ChildProcess``), not Foundation's `Process`, whose `run()`
    /// now and then crashes the test process on Linux (swift-corelibs-foundation#5472).
    private static func runBlocking(_ executable: URL, _ arguments: [String], in folder: URL?,
                                    environment: [String: String]) throws -> CLIResult {
        var env = ProcessInfo.processInfo.environment
        for (key, value) in environment { env[key] = value }
        var out: [Int32] = [0, 0]
        var err: [Int32] = [0, 0]
        guard pipe(&out) == 0 else { throw CLIError("pipe: \(String(cString: strerror(errno)))") }
        guard pipe(&err) == 0 else {
            close(out[0]); close(out[1])
            throw CLIError("pipe: \(String(cString: strerror(errno)))")
        }
        // Close-on-exec: a child another test starts meanwhile must not hold them open.
        for fd in out + err { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        let process: ChildProcess
        do {
            defer { close(out[1]); close(err[1]) }
            process = try ChildProcess(executable.path, arguments, environment: env, in: folder?.path,
                                       standardOutput: out[1], standardError: err[1])
        } catch {
            close(out[0]); close(err[0])
            throw error
        }
        // Read both pipes concurrently with the process, so a full pipe never blocks it.
        nonisolated(unsafe) var errData = Data()
        let errFD = err[0]
        let errorsRead = DispatchSemaphore(value: 0)
        Thread {
            errData = readToEnd(errFD)
            errorsRead.signal()
        }.start()
        // A command that hangs is killed after `commandTimeLimit` and named, with what it printed,
        // instead of the whole test running into its time limit without a word on the cause.
        let exited = DispatchSemaphore(value: 0)
        let killed = Atomic<Bool>(false)
        Thread {
            if exited.wait(timeout: .now() + .seconds(commandTimeLimit)) == .timedOut {
                killed.store(true, ordering: .relaxed)
                process.signal(SIGKILL)
            }
        }.start()
        let outData = readToEnd(out[0])
        process.waitUntilExit()
        exited.signal()
        errorsRead.wait()
        close(out[0]); close(err[0])
        let result = CLIResult(status: process.terminationStatus, stdout: String(decoding: outData, as: UTF8.self),
                               stderr: String(decoding: errData, as: UTF8.self))
        if killed.load(ordering: .relaxed) {
            throw CLIError("paperboy \(arguments.joined(separator: " ")) did not end within \(commandTimeLimit) s and was killed; "
                           + "stdout: \(result.stdout.suffix(4000))\nstderr: \(result.stderr.suffix(4000))")
        }
        return result
    }

    /// Seconds a command may run before ``run(_:in:environment:executable:)`` kills it and fails:
    /// below the suites' time limits (2 minutes for most), far above any command's time on a loaded
    /// machine.
    static let commandTimeLimit = 90

    private static func readToEnd(_ fd: Int32) -> Data {
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = read(fd, &buffer, buffer.count)
            if count > 0 { data.append(buffer, count: count); continue }
            if count < 0, errno == EINTR { continue }
            return data
        }
    }
}

struct CLIError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// A temporary folder removed when the test ends.
final class Workspace: @unchecked Sendable {
    let url: URL
    init() {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("paperboy-cli-\(UUID().uuidString)")
        try! FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    /// Removed by an `rm -rf` of its own, not waited for: the crash loop's workspace (a dozen
    /// libraries of unpacked pages) took 30 s to remove on a loaded disk, on a thread of the
    /// cooperative pool, where the test released it.
    deinit { _ = try? ChildProcess("/bin/rm", ["-rf", url.path]) }

    func write(_ text: String, to name: String) -> URL {
        let file = url.appendingPathComponent(name)
        try! FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        try! Data(text.utf8).write(to: file)
        return file
    }

    func write(_ data: Data, to name: String) -> URL {
        let file = url.appendingPathComponent(name)
        try! FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        try! data.write(to: file)
        return file
    }

    func path(_ name: String) -> URL { url.appendingPathComponent(name) }

    /// Writes a zip archive with python3's `zipfile`: `entries` maps entry names (`../x`
    /// included) to contents; a name ending in `@` plus a target makes a symbolic link.
    @discardableResult
    func zip(_ entries: [(String, String)], to name: String) async throws -> URL {
        let file = path(name)
        try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        let script = """
            import sys, zipfile, json
            entries = json.loads(sys.argv[2])
            with zipfile.ZipFile(sys.argv[1], "w", zipfile.ZIP_DEFLATED) as archive:
                for name, data in entries:
                    if "@" in name:
                        name, target = name.split("@", 1)
                        info = zipfile.ZipInfo(name)
                        info.external_attr = (0o120777 << 16)
                        archive.writestr(info, target)
                    else:
                        archive.writestr(name, data)
            """
        let json = String(decoding: try JSONSerialization.data(withJSONObject: entries.map { [$0.0, $0.1] }), as: UTF8.self)
        let result = try await CLI.run(["-c", script, file.path, json], executable: CLI.python3)
        #expect(result.status == 0, "\(result.stderr)")
        return file
    }
}

/// The framing of the transport protocol in Python (`read_frame`, `send`, `send_json` over
/// `inp` and `out`), for the helpers tests write; ends of input exit the helper.
let pythonFraming = #"""
    def read_frame():
        header = inp.readline()
        if not header:
            sys.exit(0)
        kind, length = header.split()
        return kind.decode(), json.loads(inp.read(int(length)))
    def send(kind, payload):
        out.write(b"%s %d\n" % (kind.encode(), len(payload)) + payload)
        out.flush()
    def send_json(kind, message):
        send(kind, json.dumps(message).encode())
    """#
