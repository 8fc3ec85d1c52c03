import Foundation
import PaperboyTestServers
import PaperboyTesting
import Testing

/// Issue 26, case 6, through `paperboy sync`: a body without a length fills a small disk that
/// holds the library; the sync fails naming the floor, and `status` says so: in process and
/// through a daemon (issue 27), whose `min_free_space` it is.
@Suite("paperboy sync on a full disk", .serialized, .timeLimit(.minutes(3)))
struct FullDiskSyncTests {
    let workspace = Workspace()
    static let diskMegabytes = 24

    @Test(arguments: CLIRoute.allCases)
    func anEndlessBodyFailsTheSyncAndStatusTellsWhy(_ route: CLIRoute) async throws {
        guard let disk = try SmallFileSystem.mount(megabytes: Self.diskMegabytes) else { return }
        defer { disk.unmount() }
        let body = try await offThePool { Data(repeating: 0x5A, count: 2 * Self.diskMegabytes << 20) }
        let server = try FaultServer { _ in ServerResponse(status: 200, body: body, chunked: true) }
        defer { server.stop() }
        let library = disk.url.appendingPathComponent("lib")
        let file = workspace.write("""
            [library]
            path = "\(library.path)"
            min_free_space = "4MiB"

            [[issues]]
            name = "weekly"
            date = 2026-11-21
              [[issues.assets]]
              url = "\(server.url("/endless.bin"))"
              path = "endless.bin"
            """, to: "paperboy.toml")

        let cli = RoutedCLI(route, workspace: workspace)
        defer { cli.stop() }
        try await cli.start(libraryWideOf: file)
        let sync = try await cli.run(["sync", "--config", file.path])
        #expect(sync.status == 1, "\(sync.stderr)")
        #expect(sync.stderr.contains("failed: weekly/endless.bin"), "\(sync.stderr)")
        #expect(sync.stderr.contains("not enough space"), "\(sync.stderr)")
        #expect(sync.stderr.contains("min_free_space"), "\(sync.stderr)")
        let partials = (try? FileManager.default.contentsOfDirectory(atPath: library.appendingPathComponent(".partial").path)) ?? []
        #expect(partials.isEmpty, "left behind: \(partials)")
        #expect(disk.availableBytes > Int64(Self.diskMegabytes - 4) << 20, "\(disk.availableBytes) bytes free")

        let status = try await cli.run(["status", "--json", "--config", file.path])
        #expect(status.status == 0, "\(status.stderr)")
        let json = try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any]
        let issues = json?["issues"] as? [[String: Any]]
        let asset = (issues?.first?["assets"] as? [[String: Any]])?.first
        #expect(asset?["state"] as? String == "failed", "\(status.stdout)")
        #expect(asset?["reason"] as? String == "insufficient-storage", "\(status.stdout)")
        #expect((asset?["error"] as? String)?.contains("not enough space") == true, "\(status.stdout)")

        let text = try await cli.run(["status", "--config", file.path])
        #expect(text.stdout.contains("endless.bin  failed"), "\(text.stdout)")
    }
}
