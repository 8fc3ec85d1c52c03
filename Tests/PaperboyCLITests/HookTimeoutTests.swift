import Foundation
import PaperboyTesting
import Testing

/// `[hooks] timeout` bounds how long a hook may run (issue 16, case 5): a real-time test, as the
/// hook runs in the `paperboy` process (its timing decision is `ChildRun`'s, tested on a test
/// clock in the core), serialized, with bounds for a loaded 2-core machine. Through a daemon the
/// hook is the daemon's, stopped there the same way (issue 27; docs/Daemon.md).
@Suite("Hook timeout", .serialized, .timeLimit(.minutes(3)))
struct HookTimeoutTests {
    let workspace = Workspace()

    /// Whether `pid` is gone (or a zombie nobody reaped yet: it runs nothing any more).
    func isGone(_ pid: Int32) -> Bool {
        guard kill(pid, 0) == 0 else { return true }
        let stat = (try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)) ?? ""
        return stat.split(separator: ")").last?.split(separator: " ").first == "Z"
    }

    /// The hook writes its child's pid (atomically: a file half written when the hook is stopped
    /// would be empty) before it hangs for an hour.
    @Test(arguments: [
        // Stops at SIGTERM; the child it left in the background ignores it.
        ("exec", "(trap '' TERM; sleep 3600) & echo $! > child.pid.new && mv child.pid.new child.pid\nexec sleep 3600\n"),
        // Ignores SIGTERM itself: SIGKILL after the grace.
        ("trap", "trap '' TERM\n(sleep 3600) & echo $! > child.pid.new && mv child.pid.new child.pid\nwait\n"),
    ], CLIRoute.allCases)
    func aHookThatRunsTooLongIsStoppedWithItsChildren(hook: (name: String, body: String), route: CLIRoute) async throws {
        let (name, body) = hook
        _ = workspace.write(Data("content".utf8), to: "content/a.pdf")
        let hook = workspace.write("#!/bin/sh\n" + body, to: "hooks/slow.sh")
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: hook.path)
        // 300 ms was too short on a loaded machine: the hook was stopped before its shell had
        // started the child and written its pid. Three seconds leave it time to.
        let file = workspace.write("""
            [library]
            path = "lib"
            [hooks]
            on_issue_available = ["hooks/slow.sh"]
            timeout = "3s"
            [[issues]]
            name = "a"
            date = 2026-11-21
              [[issues.assets]]
              url = "content/a.pdf"
            """, to: "paperboy.toml")
        let cli = RoutedCLI(route, workspace: workspace)
        defer { cli.stop() }
        try await cli.start(libraryWideOf: file)
        let result = try await cli.run(["sync", "--config", file.path])
        let stopped = "hook 'hooks/slow.sh' for issue 'a' did not finish within 3s ([hooks] timeout) and was stopped"
        switch route {
        case .inProcess:
            #expect(result.status == 1, "\(name): \(result.stderr)")
            #expect(result.stderr.contains(stopped), "\(name): \(result.stderr)")
        case .daemon:
            // By design: the daemon runs the hook and logs its failure (docs/Daemon.md); the
            // command leaves the hook to it and exits 0.
            #expect(result.status == 0, "\(name): \(result.stderr)")
            try await eventually("\(name): the daemon to stop the hook", seen: cli.daemonLog) { cli.daemonLog.contains(stopped) }
        }
        #expect(result.stdout.contains("issue a is available"), "\(name): \(result.stdout)")
        // The hook sleeps an hour: a sync that ended at all did not wait for it (no wall-clock
        // bound; one that waited fails by the suite's time limit).
        try await eventually("\(name): the hook to write its child's pid") {
            FileManager.default.fileExists(atPath: workspace.path("child.pid").path)
        }
        let child = try String(contentsOf: workspace.path("child.pid"), encoding: .utf8)
        let pid = try #require(Int32(child.trimmingCharacters(in: .whitespacesAndNewlines)), "\(name): \(child)")
        defer { if !isGone(pid) { kill(pid, SIGKILL) } }
        // SIGKILL was sent to the hook's process group before `sync` returned; the kernel carries it out.
        try await eventually("\(name): the hook's child \(pid) to be gone") { isGone(pid) }
    }
}
