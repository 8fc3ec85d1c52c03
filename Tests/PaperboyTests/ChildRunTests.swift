import Foundation
import Paperboy
import PaperboyTestServers
import PaperboyTesting
import Testing

/// `ChildRun`: the fork/exec runner hooks and probes use instead of Foundation's `Process`.
/// Each run blocks, so each test runs it off the cooperative pool.
@Suite("ChildRun")
struct ChildRunTests {
    private let path = ["PATH": "/usr/bin:/bin"]

    @Test func reportsTheExitStatusAndKeepsTheOutput() async throws {
        let run = ChildRun("/bin/sh", ["-c", "printf hello; exit 3"], environment: path, outputLimit: 64)
        let (ending, output) = try await offThePool { run.run() }
        #expect(ending == .exited(3))
        #expect(String(decoding: output, as: UTF8.self) == "hello")
    }

    @Test func keepsOnlyTheOutputLimitAndNeverBlocksAChildThatWritesMore() async throws {
        // 1 MB is far more than a pipe holds: the runner must keep reading while it waits.
        let run = ChildRun("/bin/sh", ["-c", "head -c 1000000 /dev/zero"], environment: path, timeout: .seconds(20), outputLimit: 256)
        let (ending, output) = try await offThePool { run.run() }
        #expect(ending == .exited(0))
        #expect(output.count == 256)
    }

    @Test func runsInTheFolderWithOnlyTheGivenEnvironment() async throws {
        let folder = TempFolder()
        try Data("#!/bin/sh\npwd; env\n".utf8).write(to: folder.file("probe.sh"))
        chmod(folder.file("probe.sh").path, 0o755)
        // A relative path is the folder's; nothing of this process's environment leaks in.
        let run = ChildRun("./probe.sh", environment: ["ONLY": "this"], folder: folder.url, outputLimit: 4096)
        let (ending, output) = try await offThePool { run.run() }
        let lines = String(decoding: output, as: UTF8.self).split(separator: "\n").map(String.init)
        #expect(ending == .exited(0))
        #expect(lines.first.map { URL(fileURLWithPath: $0).resolvingSymlinksInPath().path } == folder.url.resolvingSymlinksInPath().path)
        #expect(lines.contains("ONLY=this"))
        #expect(!lines.contains { $0.hasPrefix("HOME=") })
    }

    @Test func findsABareNameInThePathItIsGiven() async throws {
        let run = ChildRun("printf", ["%s", "found"], environment: path, outputLimit: 64)
        let (ending, output) = try await offThePool { run.run() }
        #expect(ending == .exited(0))
        #expect(String(decoding: output, as: UTF8.self) == "found")
    }

    @Test func aMissingProgramCannotStartAndSaysWhich() async throws {
        let run = ChildRun("/nonexistent/paperboy-hook", environment: path)
        let (ending, _) = try await offThePool { run.run() }
        guard case .couldNotStart(let reason) = ending else {
            Issue.record("expected couldNotStart, got \(ending)")
            return
        }
        #expect(reason.contains("/nonexistent/paperboy-hook"))
        #expect(reason.contains("No such file"))
    }

    @Test func aSignalIsReported() async throws {
        let run = ChildRun("/bin/sh", ["-c", "kill -KILL $$"], environment: path)
        let (ending, _) = try await offThePool { run.run() }
        #expect(ending == .signalled(SIGKILL))
    }

    @Test func theTimeoutStopsTheWholeGroupEvenAChildIgnoringSIGTERM() async throws {
        let folder = TempFolder()
        let pidFile = folder.file("grandchild.pid")
        // The grandchild ignores SIGTERM and holds nothing open: only the group's SIGKILL ends it.
        let script = "trap '' TERM; (trap '' TERM; exec sleep 30) </dev/null >/dev/null 2>&1 & echo $! > \(pidFile.path); wait"
        let run = ChildRun("/bin/sh", ["-c", script], environment: path, timeout: .milliseconds(300))
        let started = ContinuousClock.now
        let (ending, _) = try await offThePool { run.run() }
        #expect(ending == .timedOut)
        // 300 ms, then the grace period (100 ms here) before SIGKILL; generous for a loaded machine.
        #expect(ContinuousClock.now - started < .seconds(5))
        let grandchild = try #require(Int32(String(decoding: Data(contentsOf: pidFile), as: UTF8.self)
            .trimmingCharacters(in: .whitespacesAndNewlines)))
        let deadline = ContinuousClock.now + .seconds(5)
        while Self.isAlive(grandchild), ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
        #expect(!Self.isAlive(grandchild), "the grandchild \(grandchild) survived the timeout")
    }

    /// Running and not a zombie waiting for whoever adopted it to reap it.
    private static func isAlive(_ pid: pid_t) -> Bool {
        guard kill(pid, 0) == 0 else { return false }
        let stat = (try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)) ?? ""
        guard let close = stat.lastIndex(of: ")") else { return true }
        return !stat[stat.index(after: close)...].hasPrefix(" Z")
    }
}
