import Foundation
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
        var folder = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        for _ in 0..<3 {
            let candidate = folder.appendingPathComponent("paperboy")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
            folder.deleteLastPathComponent()
        }
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        return root.appendingPathComponent(".build/debug/paperboy")
    }

    /// Runs the tool on a thread of its own, so that waiting never blocks the cooperative pool
    /// (other tests' sleeps and timeouts stay punctual).
    static func run(_ arguments: [String], in folder: URL? = nil, environment: [String: String] = [:],
                    executable: URL? = nil) async throws -> CLIResult {
        let executable = executable ?? self.executable
        return try await withCheckedThrowingContinuation { continuation in
            Thread {
                continuation.resume(with: Result {
                    try runBlocking(executable, arguments, in: folder, environment: environment)
                })
            }.start()
        }
    }

    /// Runs `paperboy` on a pseudo-terminal (through python3's `pty`): standard output and error
    /// both go to the terminal, and come back together in `stdout`.
    static func runOnTerminal(_ arguments: [String], in folder: URL? = nil) async throws -> CLIResult {
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
        return try await run(["-c", script, executable.path] + arguments, in: folder, executable: python3)
    }

    /// python3, for pseudo-terminals and zip archives made to measure.
    static let python3 = URL(fileURLWithPath: "/usr/bin/python3")

    /// Runs `paperboy` and sends it SIGKILL after `delay` microseconds (from a thread of its
    /// own: punctual even when the test pool is busy); returns the process once it has exited.
    static func runKilled(_ arguments: [String], after delay: useconds_t, environment: [String: String] = [:],
                          standardError: FileHandle = .nullDevice) async throws -> Process {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        process.standardOutput = FileHandle.nullDevice
        process.standardError = standardError
        try process.run()
        let pid = process.processIdentifier
        Thread {
            usleep(delay)
            kill(pid, SIGKILL)
        }.start()
        await waitForExit(process)
        return process
    }

    /// Waits for a process on a thread of its own.
    static func waitForExit(_ process: Process) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            Thread {
                waitPolling(process)
                continuation.resume()
            }.start()
        }
    }

    /// `Process.waitUntilExit` spins a run loop, and on a thread without one it was seen
    /// busy-looping forever after the child had exited: poll `isRunning` instead.
    static func waitPolling(_ process: Process) {
        while process.isRunning { usleep(5_000) }
    }

    private static func runBlocking(_ executable: URL, _ arguments: [String], in folder: URL?,
                                    environment: [String: String]) throws -> CLIResult {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        if let folder { process.currentDirectoryURL = folder }
        var env = ProcessInfo.processInfo.environment
        for (key, value) in environment { env[key] = value }
        process.environment = env
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        try process.run()
        // Read both pipes concurrently with the process, so a full pipe never blocks it.
        nonisolated(unsafe) var errData = Data()
        let reader = Thread { errData = err.fileHandleForReading.readDataToEndOfFile() }
        reader.start()
        let outData = out.fileHandleForReading.readDataToEndOfFile()
        waitPolling(process)
        while !reader.isFinished { usleep(1000) }
        return CLIResult(status: process.terminationStatus, stdout: String(decoding: outData, as: UTF8.self),
                         stderr: String(decoding: errData, as: UTF8.self))
    }
}

/// A temporary folder removed when the test ends.
final class Workspace: @unchecked Sendable {
    let url: URL
    init() {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("paperboy-cli-\(UUID().uuidString)")
        try! FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }
    deinit { try? FileManager.default.removeItem(at: url) }

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
