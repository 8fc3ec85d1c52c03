import Foundation
import PaperboyTestServers
import PaperboyTesting
import Testing

/// Issue 31, case 1, through `paperboy sync`: nginx compresses an asset whatever Paperboy asks
/// for (`gzip_static always`). The sync fails with one line naming the URL, the encoding and
/// what to change on the server, delivers nothing, and `status` gives the code; in process and
/// through a daemon (issue 27).
@Suite("paperboy sync refuses an encoded body", .timeLimit(.minutes(3)))
struct ContentEncodingSyncTests {
    let workspace = Workspace()

    @Test(arguments: CLIRoute.allCases)
    func aForcedGzipAssetFailsTheSyncWithOneLineSayingWhatToChange(_ route: CLIRoute) async throws {
        guard let binary = try LoopbackWebServer.required(NginxServer.binary, program: "nginx", package: "nginx") else { return }
        let nginx = try await offThePool { try NginxServer(binary: binary) }
        defer { nginx.stop() }
        let data = randomData(300_000, seed: 43)
        try nginx.publishGzipped(data, at: "paper.pdf")
        let url = nginx.url("/forced-gzip/paper.pdf")
        let file = workspace.write("""
            [library]
            path = "lib"

            [[issues]]
            name = "weekly"
            date = 2026-11-21
              [[issues.assets]]
              url = "\(url)"
              path = "paper.pdf"
            """, to: "paperboy.toml")

        let cli = RoutedCLI(route, workspace: workspace)
        defer { cli.stop() }
        try await cli.start(libraryWideOf: file)
        let sync = try await cli.run(["sync", "--config", file.path])
        #expect(sync.status != 0, "\(sync.stderr)")
        let lines = sync.stderr.split(separator: "\n").filter { $0.contains("Content-Encoding") }
        #expect(lines.count == 1, "\(sync.stderr)")
        let line = String(lines.first ?? "")
        #expect(line.hasPrefix("failed: weekly/paper.pdf (\(url.absoluteString)): "), "\(line)")
        #expect(line.contains("Content-Encoding: gzip"), "\(line)")
        #expect(line.contains("make the server send this file unencoded"), "\(line)")
        #expect(line.contains("content-encoding-not-identity"), "\(line)")
        #expect(!FileManager.default.fileExists(atPath: workspace.path("lib/Issues/weekly/paper.pdf").path))
        let partials = (try? FileManager.default.contentsOfDirectory(atPath: workspace.path("lib/.partial").path)) ?? []
        #expect(partials.isEmpty, "left behind: \(partials)")

        let status = try await cli.run(["status", "--json", "--config", file.path])
        let json = try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any]
        let asset = ((json?["issues"] as? [[String: Any]])?.first?["assets"] as? [[String: Any]])?.first
        #expect(asset?["state"] as? String == "failed", "\(status.stdout)")
        #expect(asset?["reason"] as? String == "content-encoding-not-identity", "\(status.stdout)")
    }
}
