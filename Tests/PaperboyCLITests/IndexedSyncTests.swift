import Foundation
import PaperboyTestServers
import PaperboyTesting
import Testing

/// Issue 29 through `paperboy index` and `paperboy sync`, in process and through a daemon: a
/// corrected file published with its index (`indexed = true`) costs the reader its changed chunks
/// only, counted at nginx (`$body_bytes_sent` of the ranges it answered).
@Suite("paperboy sync of an indexed asset", .timeLimit(.minutes(3)))
struct IndexedSyncTests {
    let workspace = Workspace()

    func config(_ url: URL, indexed: Bool) -> String {
        """
        [library]
        path = "lib"

        [[issues]]
        name = "weekly"
        date = 2026-11-21
          [[issues.assets]]
          url = "\(url)"
          path = "mag.pdf"
          \(indexed ? "indexed = true" : "")
        """
    }

    @Test(arguments: CLIRoute.allCases)
    func aCorrectedFileFetchesItsChangedChunksOnly(_ route: CLIRoute) async throws {
        guard let binary = try LoopbackWebServer.required(NginxServer.binary, program: "nginx", package: "nginx") else { return }
        let nginx = try await offThePool { try NginxServer(binary: binary) }
        defer { nginx.stop() }
        let v1 = randomData(3 << 20, seed: 29)
        var v2 = v1
        v2.replaceSubrange(1_500_000..<1_500_000 + 50_000, with: randomData(50_000, seed: 30))
        try nginx.publish(v1, at: "v1.pdf")
        try nginx.publish(v2, at: "v2.pdf")

        let cli = RoutedCLI(route, workspace: workspace)
        defer { cli.stop() }
        // The publisher's side: `paperboy index` beside the corrected file.
        let published = workspace.write(v2, to: "v2.pdf")
        let indexing = try await cli.run(["index", published.path])
        #expect(indexing.status == 0, "\(indexing.stderr)")
        try nginx.publish(Data(contentsOf: workspace.path("v2.pdf.pbidx")), at: "v2.pdf.pbidx")

        let file = workspace.write(config(nginx.url("/v1.pdf"), indexed: false), to: "paperboy.toml")
        try await cli.start(libraryWideOf: file)
        let first = try await cli.run(["sync", "--config", file.path])
        #expect(first.status == 0, "\(first.stderr)")
        let before = nginx.accessLog.count

        _ = workspace.write(config(nginx.url("/v2.pdf"), indexed: true), to: "paperboy.toml")
        let second = try await cli.run(["sync", "--config", file.path])
        #expect(second.status == 0, "\(second.stderr)")
        #expect((try? Data(contentsOf: workspace.path("lib/Issues/weekly/mag.pdf"))) == v2)
        let answers = nginx.accessLog.dropFirst(before)
        let ranged = answers.filter { $0.hasPrefix("206 ") }.compactMap { $0.split(separator: " ").last.flatMap { Int($0) } }.reduce(0, +)
        // The changed 50 KB and at most a largest chunk (128 KiB) on each side.
        #expect(ranged > 0 && ranged <= 50_000 + 2 * (128 << 10), "\(answers)")
        #expect(!answers.contains { $0.hasPrefix("200 ") && $0.hasSuffix(" \(v2.count)") }, "\(answers)")

        // What the reader is told: the summary's figures and the asset's, those nginx counted.
        let reused = v2.count - ranged
        #expect(second.stdout.contains("\(Self.shown(v2.count)) delivered, \(Self.shown(ranged)) fetched (\(reused * 100 / v2.count) % reused)"),
                "\(second.stdout)")
        let status = try await cli.run(["status", "--json", "--config", file.path])
        #expect(status.status == 0, "\(status.stderr)")
        let document = try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any]
        let assets = (document?["issues"] as? [[String: Any]])?.first?["assets"] as? [[String: Any]]
        let asset = assets?.first { ($0["url"] as? String)?.hasSuffix("/v2.pdf") == true }
        #expect(asset?["bytesReused"] as? Int == reused, "\(status.stdout)")
        let text = try await cli.run(["status", "--config", file.path])
        #expect(text.stdout.contains("reused \(Self.shown(reused))"), "\(text.stdout)")
    }

    /// Issue "special" holds the file issue "weekly" received, unchanged, under another name and
    /// URL, with a small file beside it: the library copies it from weekly's delivered copy
    /// (through the store's chunk table) and fetches nothing of it, counted at nginx.
    @Test(arguments: CLIRoute.allCases)
    func aFileAnEarlierIssueReceivedIsNotFetchedAgain(_ route: CLIRoute) async throws {
        guard let binary = try LoopbackWebServer.required(NginxServer.binary, program: "nginx", package: "nginx") else { return }
        let nginx = try await offThePool { try NginxServer(binary: binary) }
        defer { nginx.stop() }
        let shared = randomData(3 << 20, seed: 31)
        let small = randomData(10_000, seed: 32)
        let cli = RoutedCLI(route, workspace: workspace)
        defer { cli.stop() }
        // The publisher indexes the file once and serves it at two URLs (two issues' folders).
        let published = workspace.write(shared, to: "mag.pdf")
        let indexing = try await cli.run(["index", published.path])
        #expect(indexing.status == 0, "\(indexing.stderr)")
        let index = try Data(contentsOf: workspace.path("mag.pdf.pbidx"))
        for name in ["weekly/mag.pdf", "special/ads.pdf"] {
            try nginx.publish(shared, at: name)
            try nginx.publish(index, at: name + ".pbidx")
        }
        try nginx.publish(small, at: "special/note.txt")

        let weekly = config(nginx.url("/weekly/mag.pdf"), indexed: true)
        let file = workspace.write(weekly, to: "paperboy.toml")
        try await cli.start(libraryWideOf: file)
        let first = try await cli.run(["sync", "--config", file.path])
        #expect(first.status == 0, "\(first.stderr)")
        let before = nginx.accessLog.count

        _ = workspace.write(weekly + """


            [[issues]]
            name = "special"
            date = 2026-11-28
              [[issues.assets]]
              url = "\(nginx.url("/special/ads.pdf"))"
              path = "ads/full page.pdf"
              indexed = true
              [[issues.assets]]
              url = "\(nginx.url("/special/note.txt"))"
              path = "note.txt"
            """, to: "paperboy.toml")
        let second = try await cli.run(["sync", "--config", file.path])
        #expect(second.status == 0, "\(second.stderr)")
        #expect((try? Data(contentsOf: workspace.path("lib/Issues/special/ads/full page.pdf"))) == shared)
        #expect((try? Data(contentsOf: workspace.path("lib/Issues/special/note.txt"))) == small)
        let answers = nginx.accessLog.dropFirst(before)
        // Of the shared file, its index only: no range, and the small file and the index whole.
        #expect(!answers.contains { $0.hasPrefix("206 ") }, "\(answers)")
        let sent = answers.compactMap { $0.split(separator: " ").last.flatMap { Int($0) } }.reduce(0, +)
        #expect(sent == small.count + index.count, "\(answers)")

        // The summary counts every asset the configuration names: weekly's, fetched by the first sync, too.
        let total = 2 * shared.count + small.count
        #expect(second.stdout.contains("\(Self.shown(total)) delivered, \(Self.shown(total - shared.count)) fetched (\(shared.count * 100 / total) % reused)"),
                "\(second.stdout)")
        let status = try await cli.run(["status", "--json", "--config", file.path])
        #expect(status.status == 0, "\(status.stderr)")
        let document = try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any]
        let special = (document?["issues"] as? [[String: Any]])?.first { $0["name"] as? String == "special" }
        let asset = (special?["assets"] as? [[String: Any]])?.first { ($0["url"] as? String)?.hasSuffix("/ads.pdf") == true }
        #expect(asset?["bytesReused"] as? Int == shared.count, "\(status.stdout)")
    }

    /// A byte count as the CLI prints it (1000-based, one decimal).
    static func shown(_ count: Int) -> String {
        count < 1000 ? "\(count) B" : count < 1_000_000 ? String(format: "%.1f kB", Double(count) / 1000) : String(format: "%.1f MB", Double(count) / 1_000_000)
    }
}
