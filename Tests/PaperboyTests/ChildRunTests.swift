import Foundation
import Synchronization
import Paperboy
import PaperboyTestServers
import PaperboyTesting
import Testing

/// `ChildRun`: the fork/exec runner hooks and probes use instead of Foundation's `Process`.
/// Each run blocks, so each test runs it off the cooperative pool.
@Suite("ChildRun", .timeLimit(.minutes(2)))
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
        try Self.writeScript("#!/bin/sh\npwd; env\n", to: folder.file("probe.sh"))
        // A relative path is the folder's; nothing of this process's environment leaks in.
        let run = ChildRun("./probe.sh", environment: ["ONLY": "this"], folder: folder.url, outputLimit: 4096)
        var (ending, output) = try await offThePool { run.run() }
        // Another test's child forked while the script was open for writing holds it until its
        // exec (ETXTBSY): run again once it has.
        try await eventually("the script free to run", seen: "\(ending)") {
            guard case .couldNotStart(let reason) = ending, reason.contains("Text file busy") else { return true }
            (ending, output) = try await offThePool { run.run() }
            return false
        }
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

    @Test func theTimeoutSignalsAtItsDeadlineAndKillsAfterTheGrace() {
        var stopping = ChildRun.Stopping(start: .seconds(5), timeout: .milliseconds(300))
        #expect(stopping.grace == .milliseconds(100))
        #expect(stopping.signalDue(at: .seconds(5) + .milliseconds(299)) == nil)
        #expect(stopping.signalDue(at: .seconds(5) + .milliseconds(300)) == SIGTERM)
        #expect(stopping.signalDue(at: .seconds(5) + .milliseconds(300)) == nil, "SIGTERM is sent once")
        #expect(stopping.signalDue(at: .seconds(5) + .milliseconds(399)) == nil)
        #expect(stopping.signalDue(at: .seconds(5) + .milliseconds(400)) == SIGKILL)
        #expect(stopping.signalDue(at: .seconds(60)) == nil, "SIGKILL is sent once")
        #expect(stopping.sent == [SIGTERM, SIGKILL])
        // Late polls send both, in order, one per poll.
        var late = ChildRun.Stopping(start: .zero, timeout: .seconds(1))
        #expect(late.signalDue(at: .seconds(10)) == SIGTERM)
        #expect(late.signalDue(at: .seconds(10)) == SIGKILL)
        // The grace: a tenth of the timeout, from 100 ms to 5 s.
        #expect(ChildRun.Stopping(start: .zero, timeout: .seconds(10)).grace == .seconds(1))
        #expect(ChildRun.Stopping(start: .zero, timeout: .seconds(600)).grace == .seconds(5))
    }

    /// The run's timeout on a test clock: SIGTERM exactly at the deadline, SIGKILL to the whole
    /// group (a grandchild too) exactly a grace period later.
    @Test func theTimeoutFollowsTheRunsClock() async throws {
        let folder = TempFolder()
        let marks = folder.file("marks")
        let pidFile = folder.file("grandchild.pid")
        // The child notes SIGTERM and goes on; the grandchild ignores it: only SIGKILL ends them.
        let script = "trap 'echo TERM >> \(marks.path)' TERM; (trap '' TERM; exec sleep 300) </dev/null >/dev/null 2>&1 & "
            + "echo $! > \(pidFile.path); echo started >> \(marks.path); while :; do wait; done"
        let clock = TestClock()
        let run = ChildRun("/bin/sh", ["-c", script], environment: path, timeout: .seconds(10), clock: clock)
        let ended = Ended()
        let running = Task { try await offThePool { let (ending, _) = run.run(); ended.value.withLock { $0 = ending } } }
        let seen = { (try? String(contentsOf: marks, encoding: .utf8)) ?? "" }
        try await eventually("the child started", seen: seen()) { seen().contains("started") && FileManager.default.fileExists(atPath: pidFile.path) }

        clock.advance(by: .seconds(10) - .milliseconds(1))
        #expect(!seen().contains("TERM"), "SIGTERM before the deadline")
        clock.advance(by: .milliseconds(1))
        try await eventually("SIGTERM at the deadline", seen: seen()) { seen().contains("TERM") }
        // Still running through the grace period (1 s for a 10 s timeout).
        clock.advance(by: .milliseconds(999))
        #expect(ended.value.withLock { $0 } == nil, "killed before the grace period ended")
        clock.advance(by: .milliseconds(1))
        try await running.value
        #expect(ended.value.withLock { $0 } == .timedOut)
        let grandchild = try #require(Int32(String(decoding: Data(contentsOf: pidFile), as: UTF8.self)
            .trimmingCharacters(in: .whitespacesAndNewlines)))
        try await eventually("the grandchild \(grandchild) gone") { !Self.isAlive(grandchild) }
    }

    /// Writes an executable script through a descriptor closed on exec, so that only a child
    /// between its fork and its exec can hold it open for writing.
    static func writeScript(_ text: String, to url: URL) throws {
        let fd = open(url.path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o755)
        guard fd >= 0 else { throw ServerError("cannot create \(url.path): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        let bytes = Array(text.utf8)
        guard write(fd, bytes, bytes.count) == bytes.count else { throw ServerError("cannot write \(url.path)") }
    }

    /// Running and not a zombie waiting for whoever adopted it to reap it.
    static func isAlive(_ pid: pid_t) -> Bool {
        guard kill(pid, 0) == 0 else { return false }
        let stat = (try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)) ?? ""
        guard let close = stat.lastIndex(of: ")") else { return true }
        return !stat[stat.index(after: close)...].hasPrefix(" Z")
    }
}

/// How a run on another thread ended, once it has.
private final class Ended: Sendable {
    let value = Mutex<ChildRun.Ending?>(nil)
}

/// A child and its grandchild really killed after the timeout, in real time: the bound is
/// generous, for a loaded machine; the exact moments are `ChildRun`'s tests, on a test clock.
@Suite("ChildRun in real time", .serialized, .timeLimit(.minutes(2)))
struct ChildRunRealTimeTests {
    private let path = ["PATH": "/usr/bin:/bin"]

    @Test func theTimeoutStopsTheWholeGroupEvenAChildIgnoringSIGTERM() async throws {
        let folder = TempFolder()
        let pidFile = folder.file("grandchild.pid")
        // The grandchild ignores SIGTERM and holds nothing open: only the group's SIGKILL ends it.
        let script = "trap '' TERM; (trap '' TERM; exec sleep 3600) </dev/null >/dev/null 2>&1 & echo $! > \(pidFile.path); wait"
        let run = ChildRun("/bin/sh", ["-c", script], environment: path, timeout: .milliseconds(300))
        // Timed on the runner's thread: the cooperative pool's delay in resuming this test is not the runner's.
        let ending = try await offThePool { run.run().0 }
        // 300 ms, then the grace period (100 ms here) before SIGKILL. `.timedOut` says the timeout
        // stopped it; that it returned at all, that it did not wait for the grandchild's hour of
        // sleep (no wall-clock bound: the exact moments are ChildRunTests', on a test clock).
        #expect(ending == .timedOut)
        let grandchild = try #require(Int32(String(decoding: Data(contentsOf: pidFile), as: UTF8.self)
            .trimmingCharacters(in: .whitespacesAndNewlines)))
        try await eventually("the grandchild \(grandchild) gone") { !ChildRunTests.isAlive(grandchild) }
    }
}
