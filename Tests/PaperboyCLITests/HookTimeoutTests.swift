import Foundation
import PaperboyTesting
import Testing

/// `[hooks] timeout` bounds how long a hook may run (issue 16, case 5).
@Suite("Hook timeout")
struct HookTimeoutTests {
    let workspace = Workspace()

    /// Whether `pid` is gone (or a zombie nobody reaped yet: it runs nothing any more).
    func isGone(_ pid: Int32) -> Bool {
        guard kill(pid, 0) == 0 else { return true }
        let stat = (try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)) ?? ""
        return stat.split(separator: ")").last?.split(separator: " ").first == "Z"
    }

    @Test(arguments: [
        // Stops at SIGTERM; the child it left in the background ignores it.
        ("exec", "(trap '' TERM; sleep 30) & echo $! > child.pid\nexec sleep 30\n"),
        // Ignores SIGTERM itself: SIGKILL after the grace.
        ("trap", "trap '' TERM\n(sleep 30) & echo $! > child.pid\nwait\n"),
    ])
    func aHookThatRunsTooLongIsStoppedWithItsChildren(name: String, body: String) async throws {
        _ = workspace.write(Data("content".utf8), to: "content/a.pdf")
        let hook = workspace.write("#!/bin/sh\n" + body, to: "hooks/slow.sh")
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: hook.path)
        let file = workspace.write("""
            [library]
            path = "lib"
            [hooks]
            on_issue_available = ["hooks/slow.sh"]
            timeout = "300ms"
            [[issues]]
            name = "a"
            date = 2026-11-21
              [[issues.assets]]
              url = "content/a.pdf"
            """, to: "paperboy.toml")
        let started = ContinuousClock.now
        let result = try await CLI.run(["sync", "--config", file.path])
        #expect(ContinuousClock.now - started < .seconds(15), "\(name): the hook was not stopped")
        #expect(result.status == 1, "\(name): \(result.stderr)")
        #expect(result.stderr.contains("hook 'hooks/slow.sh' for issue 'a' did not finish within 300ms ([hooks] timeout)"),
                "\(name): \(result.stderr)")
        #expect(result.stdout.contains("issue a is available"), "\(name): \(result.stdout)")
        let child = try String(contentsOf: workspace.path("child.pid"), encoding: .utf8)
        let pid = try #require(Int32(child.trimmingCharacters(in: .whitespacesAndNewlines)))
        // SIGKILL was sent before `sync` returned; give the kernel a moment to carry it out.
        let deadline = ContinuousClock.now + .seconds(2)
        while !isGone(pid), ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
        #expect(isGone(pid), "\(name): the hook's child \(pid) is still running")
    }
}
