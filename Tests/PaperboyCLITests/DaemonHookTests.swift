#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Paperboy
import PaperboyClient
import PaperboyTestServers
import PaperboyTesting
import Testing

/// The daemon runs `[hooks] on_issue_available` itself, once per issue that becomes available.
@Suite("paperboy daemon: the issue hook", .serialized, .timeLimit(.minutes(2)))
struct DaemonHookTests {
    let workspace = Workspace()

    @Test func theDaemonRunsTheHookOnceForEachIssueThatBecomesAvailable() async throws {
        let runtime = workspace.path("runtime")
        mkdir(runtime.path, 0o700)
        let marks = workspace.path("marks.txt")
        let hook = workspace.write("#!/bin/sh\necho \"$PAPERBOY_ISSUE $PAPERBOY_BADGE\" >> \(marks.path)\n", to: "hooks/mark.sh")
        chmod(hook.path, 0o755)
        let config = workspace.write("""
            [library]
            path = "lib"
            [hooks]
            on_issue_available = ["hooks/mark.sh"]
            """, to: "paperboy.toml")
        let daemon = try await DaemonProcess(config: config, runtime: runtime, log: workspace.path("daemon.log"))
        defer { daemon.process.signal(SIGKILL) }
        let client = try await Library.connect(socket: daemon.socket)
        // Two issues, one of two assets: the hook runs when the last asset of each is delivered.
        // Both assets are added before either downloads: an issue that gains an asset after it
        // became available becomes available again when that one is delivered (another hook run).
        let first = try await client.addIssue(name: "first", date: Date())
        var assets: [AssetDownload] = []
        for name in ["a.bin", "b.bin"] {
            let source = workspace.write(randomData(50_000, seed: UInt64(name.count)), to: "src/first-\(name)")
            assets.append(try await first.addAsset(AssetRequest(url: source, destinationPath: name)))
        }
        for asset in assets { try await asset.download() }
        let second = try await client.addIssue(name: "second", date: Date())
        try await second.addAsset(AssetRequest(url: workspace.write(randomData(10_000), to: "src/c.bin"), destinationPath: "c.bin")).download()
        let lines = { (try? String(contentsOf: marks, encoding: .utf8))?.split(separator: "\n").map(String.init) ?? [] }
        try await eventually("the hook to run for both issues", seen: "\(lines())") { lines().count >= 2 }
        // Hooks run one at a time, in the order issues become available: once a third issue's
        // run is written, a wrong second run of either of the first two would be there too.
        let third = try await client.addIssue(name: "third", date: Date())
        try await third.addAsset(AssetRequest(url: workspace.write(randomData(1_000), to: "src/d.bin"), destinationPath: "d.bin")).download()
        try await eventually("the hook to run for the third issue", seen: "\(lines())") { lines().contains { $0.hasPrefix("third ") } }
        let names = lines().map { $0.split(separator: " ").first.map(String.init) ?? "" }
        #expect(names.count == 3 && names.last == "third" && names.dropLast().sorted() == ["first", "second"], "\(lines())")
        #expect(lines().allSatisfy { Int($0.split(separator: " ").last ?? "") ?? 0 >= 1 }, "badge: \(lines())")
        client.disconnect()
        _ = await daemon.stop()
    }
}
