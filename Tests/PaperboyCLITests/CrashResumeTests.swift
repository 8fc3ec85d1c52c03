import Foundation
import PaperboyTestServers
import PaperboyTesting
import Testing

/// Kills `paperboy sync` with SIGKILL at random moments of a rate-limited download, then lets a
/// last run finish: the delivered file must be byte-identical, and the bytes transferred twice
/// (written after the last durable checkpoint of a killed run) must stay bounded.
@Suite("crash-proof resume", .serialized, .timeLimit(.minutes(3)))
struct CrashResumeTests {
    let workspace = Workspace()
    let rate = 6_000_000
    let size = 16_000_000

    /// Read on a thread of its own: 16 MB from /dev/urandom is long work for the pool.
    func randomBytes(_ count: Int) async throws -> Data {
        try await offThePool { FileHandle(forReadingAtPath: "/dev/urandom")!.readData(ofLength: count) }
    }

    struct AssetView {
        var id: String
        var bytesWritten: Int
        var state: String
    }

    func status(_ config: URL) async throws -> AssetView {
        let result = try await CLI.run(["status", "--json", "--config", config.path])
        guard let json = try? JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any] else {
            throw CLIError("status --json exited \(result.status) without JSON: \(result.stderr)")
        }
        let issues = json["issues"] as? [[String: Any]] ?? []
        let asset = (issues.first?["assets"] as? [[String: Any]])?.first ?? [:]
        return AssetView(id: asset["id"] as? String ?? "", bytesWritten: asset["bytesWritten"] as? Int ?? 0,
                         state: asset["state"] as? String ?? "")
    }

    /// Random source bytes and a rate-limited config syncing them into issue `issue`.
    func rateLimitedSource(issue: String, assetLines: (Data) -> String) async throws -> (Data, URL) {
        let data = try await randomBytes(size)
        _ = workspace.write(data, to: "source/big.bin")
        let config = workspace.write("""
            [library]
            path = "lib"
            [bandwidth]
            limit = "\(rate)"
            [[issues]]
            name = "\(issue)"
            date = 2026-11-21
              [[issues.assets]]
              url = "source/big.bin"
            \(assetLines(data))
            """, to: "paperboy.toml")
        return (data, config)
    }

    @Test func killedSyncsResumeAndDeliverAnIdenticalFile() async throws {
        let (data, config) = try await rateLimitedSource(issue: "crash") { data in
            "  sha256 = \"\(sha256Hex(data))\"\n  path = \"big.bin\""
        }

        var recorded = 0          // durable bytes when a run starts
        var transferred = 0       // bytes written by all runs, by the partial file's length at each kill
        var kills = 0
        for _ in 0..<5 {
            let log = workspace.path("run.log")
            _ = FileManager.default.createFile(atPath: log.path, contents: nil)
            let process = try await CLI.runKilled(
                ["sync", "-q", "--config", config.path], after: useconds_t.random(in: 300_000...1_300_000),
                standardError: try FileHandle(forWritingTo: log))
            guard process.terminationReason == .uncaughtSignal else {
                let output = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
                #expect(process.terminationStatus == 0, "a run ended by itself: \(output)")
                break
            }
            kills += 1
            let view = try await status(config)
            let partial = workspace.path("lib/.partial/\(view.id)")
            let onDisk = (try? FileManager.default.attributesOfItem(atPath: partial.path)[.size] as? Int) ?? nil
            transferred += max(0, (onDisk ?? view.bytesWritten) - recorded)
            #expect(view.bytesWritten <= onDisk ?? view.bytesWritten, "recorded bytes beyond the file")
            recorded = view.bytesWritten
        }
        let last = try await CLI.run(["sync", "--config", config.path])
        #expect(last.status == 0, "\(last.stderr)")
        transferred += size - recorded
        let delivered = workspace.path("lib/Issues/crash/big.bin")
        #expect(try sha256Hex(ofFileAt: delivered) == sha256Hex(data))
        let waste = transferred - size
        print("crash-proof resume: \(kills) kills, \(transferred) bytes transferred for \(size) (waste \(waste) bytes, \(String(format: "%.1f", Double(waste) * 100 / Double(size))) %)")
        // Each kill loses what was written since the last checkpoint (every 0.5 s); allow twice
        // that, for a loaded machine, plus the limiter's small burst and one chunk.
        #expect(waste <= kills * (rate + 2 * (1 << 20)), "waste \(waste) bytes over \(kills) kills")
        #expect(kills >= 1)
    }

    @Test func interruptStopsCleanlyAndTheNextSyncResumes() async throws {
        let (data, config) = try await rateLimitedSource(issue: "int") { _ in "" }
        let process = try ChildProcess(CLI.executable.path, ["sync", "-q", "--config", config.path])
        defer { process.signal(SIGKILL) }
        // Interrupted once it has written bytes (before, there would be nothing to record).
        let library = workspace.path("lib")
        try await eventually("the sync to write its first bytes", seen: "\(CLI.partialBytes(in: library)) bytes") {
            CLI.partialBytes(in: library) > 0 || !process.isRunning
        }
        process.signal(SIGINT)
        await CLI.waitForExit(process)
        #expect(process.terminationStatus == 130)
        let view = try await status(config)
        #expect(view.state == "paused" || view.state == "waiting")
        // Closing records the exact byte count, not only the last checkpoint.
        let partial = workspace.path("lib/.partial/\(view.id)")
        let onDisk = try FileManager.default.attributesOfItem(atPath: partial.path)[.size] as? Int
        #expect(view.bytesWritten > 0)
        #expect(view.bytesWritten == onDisk)
        let last = try await CLI.run(["sync", "--config", config.path])
        #expect(last.status == 0, "\(last.stderr)")
        #expect(try Bytes(Data(contentsOf: workspace.path("lib/Issues/int/big.bin"))) == Bytes(data))
    }
}
