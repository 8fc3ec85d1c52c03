#if canImport(Glibc)
import Glibc
#endif
import Foundation
import PaperboyTestServers
import PaperboyTesting
import Testing

/// `sync` is a one-shot command: a retry due later than `[scheduler] max_sync_wait` ends its wait
/// for the asset (exit 75, a line naming the asset and when the retry is due), in-process and
/// through a daemon, which itself goes on waiting (issue 26, case 8).
@Suite("paperboy sync and a retry due in an hour", .serialized, .timeLimit(.minutes(3)))
struct LongRetryTests {
    let workspace = Workspace()

    /// A server answering every request `503` with `Retry-After: 3600`.
    func unavailableServer() throws -> FaultServer {
        try FaultServer { _ in ServerResponse(status: 503, headers: [("Retry-After", "3600")], body: Data("later\n".utf8)) }
    }

    func config(_ url: URL, maxSyncWait: String? = nil) -> URL {
        workspace.write("""
            [library]
            path = "lib"
            [scheduler]
            retry_base_delay = "20ms"
            retry_max_delay = "50ms"
            \(maxSyncWait.map { "max_sync_wait = \"\($0)\"" } ?? "")
            [[issues]]
            name = "a"
            date = 2026-11-21
              [[issues.assets]]
              url = "\(url.absoluteString)"
              path = "late.bin"
            """, to: "paperboy.toml")
    }

    /// Runs `paperboy` and expects it to end within a minute (it would wait an hour without the
    /// limit): killed then, and the test fails saying so.
    func runEnding(_ cli: RoutedCLI, _ arguments: [String]) async throws -> CLIResult {
        let out = workspace.path("out-\(UUID().uuidString)")
        let err = workspace.path("err-\(UUID().uuidString)")
        let outFD = open(out.path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        let errFD = open(err.path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        let process: ChildProcess
        do {
            defer { close(outFD); close(errFD) }
            process = try ChildProcess(CLI.executable.path, arguments,
                                       environment: ProcessInfo.processInfo.environment.merging(cli.environment) { $1 },
                                       standardOutput: outFD, standardError: errFD)
        }
        let said = { (try? String(contentsOf: err, encoding: .utf8)) ?? "" }
        do {
            try await eventually("paperboy \(arguments.first ?? "") to end instead of waiting for the retry", timeout: .seconds(60),
                                 seen: "its stderr: \(said())") { !process.isRunning }
        } catch {
            process.signal(SIGKILL)
            await process.exited()
            throw error
        }
        await process.exited()
        return CLIResult(status: process.terminationStatus, stdout: (try? String(contentsOf: out, encoding: .utf8)) ?? "", stderr: said())
    }

    /// The retry's due date in the line `sync` printed for the asset.
    func dueDate(in stderr: String) -> Date? {
        guard let line = stderr.split(separator: "\n").first(where: { $0.hasPrefix("waiting: a/late.bin: retry ") }),
              let range = line.range(of: "is due at ") else { return nil }
        return try? Date(String(line[range.upperBound...].prefix(20)), strategy: .iso8601)
    }

    /// Through a daemon, the daemon goes on waiting for the retry once the command ended.
    @Test(arguments: CLIRoute.allCases)
    func aRetryDueInAnHourEndsTheSyncWith75NamingTheAssetAndWhenItIsDue(_ route: CLIRoute) async throws {
        let server = try unavailableServer()
        let file = config(server.url("/late.bin"))
        let cli = RoutedCLI(route, workspace: workspace)
        defer { cli.stop() }
        try await cli.start(libraryWideOf: file)
        let started = Date()
        let result = try await runEnding(cli, ["sync", "--config", file.path])
        #expect(result.status == 75, "\(result.stderr)")
        #expect(server.requests.count == 1, "one attempt; the retry is the daemon's or the next sync's")
        let due = try #require(dueDate(in: result.stderr), "\(result.stderr)")
        #expect(due > started.addingTimeInterval(3500) && due < Date().addingTimeInterval(3700), "\(result.stderr)")
        #expect(result.stderr.contains("later than [scheduler] max_sync_wait (1m) allows a sync to wait"), "\(result.stderr)")
        #expect(result.stderr.contains("paperboy: 1 asset(s) wait for a retry"), "\(result.stderr)")

        // status shows it waiting for that retry, until that date (in the daemon, still running).
        #expect(cli.daemon?.process.isRunning ?? true)
        let status = try await cli.run(["status", "--json", "--config", file.path])
        #expect(status.status == 0, "\(status.stderr)")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any])
        let asset = try #require(((json["issues"] as? [[String: Any]])?.first?["assets"] as? [[String: Any]])?.first)
        #expect(asset["state"] as? String == "waiting", "\(status.stdout)")
        #expect(asset["retryAt"] as? String == due.formatted(.iso8601), "\(status.stdout)")
        let text = try await cli.run(["status", "--config", file.path])
        #expect(text.stdout.contains("late.bin  waiting"), "\(text.stdout)")
        #expect(text.stdout.contains("retry 2 at \(due.formatted(.iso8601))"), "\(text.stdout)")
    }

    @Test(arguments: CLIRoute.allCases)
    func aRetryWithinMaxSyncWaitIsStillWaitedFor(_ route: CLIRoute) async throws {
        // The first answer asks for a retry in 1 s (within the limit), the second serves the file.
        let data = randomData(4096, seed: 26)
        let server = try FaultServer { request in
            request.index == 0
                ? ServerResponse(status: 503, headers: [("Retry-After", "1")])
                : .serving(data, for: request)
        }
        let file = config(server.url("/late.bin"), maxSyncWait: "30s")
        let cli = RoutedCLI(route, workspace: workspace)
        defer { cli.stop() }
        try await cli.start(libraryWideOf: file)
        let result = try await runEnding(cli, ["sync", "--config", file.path])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(try Data(contentsOf: workspace.path("lib/Issues/a/late.bin")) == data)
        #expect(server.requests.count == 2)
    }
}
