import Foundation
import Paperboy
import PaperboyTestServers
import PaperboyTesting
import Synchronization
import Testing

/// `paperboy sync` plans in batches and transfers while it plans (issue 17).
@Suite("sync streams its plan", .timeLimit(.minutes(3)))
struct SyncStreamingTests {
    let workspace = Workspace()

    /// The second asset comes from a loopback server; 20,000 others wait for a network their
    /// policy allows (cellular only, on a wired network), so the sync does not fetch them. The
    /// server counts the assets in the library when the first request arrives. (The first asset
    /// is asked for once the whole issue is added, so that the issue cannot complete early:
    /// SyncPlanTests; it is one of the waiting ones here.)
    /// Through a daemon the batches travel as `ADDASSETS` frames (issue 27).
    @Test(arguments: CLIRoute.allCases)
    func aSyncTransfersBeforeItsLastBatchIsWritten(_ route: CLIRoute) async throws {
        let waiting = 20_000
        let library = workspace.path("lib")
        let seenAtFirstRequest = Mutex<Int?>(nil)
        let server = try FaultServer { request in
            if request.index == 0 {
                let reader = try? Library.openForReading(at: library)
                seenAtFirstRequest.withLock { $0 = reader?.local?.issue(named: "big")?.assets.count ?? -1 }
            }
            return .serving(Data("x".utf8), for: request)
        }
        defer { server.stop() }
        var text = "[library]\npath = \"lib\"\nsync_to_disk = false\n[[issues]]\nname = \"big\"\ndate = 2026-11-21\n"
        for index in 0..<waiting {
            if index == 1 { text += "  [[issues.assets]]\n  url = \"\(server.url("/first"))\"\n  path = \"first\"\n" }
            text += "  [[issues.assets]]\n  url = \"http://192.0.2.1/a\(index)\"\n  path = \"a\(index)\"\n  allowed_networks = [\"cellular\"]\n"
        }
        let config = workspace.write(text, to: "paperboy.toml")
        let cli = RoutedCLI(route, workspace: workspace)
        defer { cli.stop() }
        try await cli.start(libraryWideOf: config)
        let run = try await cli.run(["sync", "-q", "--config", config.path])
        #expect(run.status == 75, "\(run.stderr)")
        #expect(server.requests.count == 1)
        let seen = try #require(seenAtFirstRequest.withLock { $0 })
        #expect(seen >= 1 && seen <= waiting, "the first transfer began with \(seen) of \(waiting + 1) assets written")
        #expect(try Data(contentsOf: workspace.path("lib/Issues/big/first")) == Data("x".utf8))
    }
}
