import Foundation
import PaperboyTestServers
import PaperboyTesting
import Testing

/// `paperboy sync` after the source was replaced by other bytes of the same size and mtime
/// (`cp -p`, `rsync -t`): nginx's ETag (`"mtime-size"`) is unchanged, the resume splices, the
/// catalog's SHA-256 catches it, and the same run fetches the file again from 0 and exits 0
/// (issue 31: it exited 1, and only the next sync delivered the file).
@Suite("sync after a same-mtime replacement", .serialized, .timeLimit(.minutes(2)), .enabled(if: NginxServer.binary != nil))
struct SpliceSyncTests {
    let workspace = Workspace()
    let size = 4_000_000

    @Test func theSameSyncFetchesASplicedFileAgainFromZero() async throws {
        let binary = try #require(NginxServer.binary)
        let nginx = try await offThePool { try NginxServer(binary: binary, slowRate: "2m") }
        defer { nginx.stop() }
        let old = try await generated(size, seed: 3101)
        let new = try await generated(size, seed: 3102)
        let file = nginx.documentRoot.appendingPathComponent("big.bin")
        try old.write(to: file)
        let config = workspace.write("""
            [library]
            path = "lib"
            [[issues]]
            name = "splice"
            date = 2026-11-21
              [[issues.assets]]
              url = "\(nginx.url("/slow/big.bin").absoluteString)"
              sha256 = "\(sha256Hex(new))"
              path = "big.bin"
            """, to: "paperboy.toml")

        // Killed as soon as it wrote bytes (from a thread of its own, so that a busy test pool
        // cannot let it finish first): they stay resumable, with nginx's ETag.
        let library = workspace.path("lib")
        let killed = try await CLI.runKilled(["sync", "-q", "--config", config.path], after: 0,
                                             once: { CLI.partialBytes(in: library) > 0 })
        try #require(killed.terminationReason == .uncaughtSignal, "the first run ended by itself")

        let mtime = try #require(FileManager.default.attributesOfItem(atPath: file.path)[.modificationDate] as? Date)
        try new.write(to: file)
        try FileManager.default.setAttributes([.modificationDate: mtime], ofItemAtPath: file.path)

        let run = try await CLI.run(["sync", "--config", config.path])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(try sha256Hex(ofFileAt: workspace.path("lib/Issues/splice/big.bin")) == sha256Hex(new))
        // The first run's request, the spliced resume (206), the whole file again (200).
        let log = nginx.accessLog
        #expect(log.count == 3, "\(log)")
        #expect(log.dropFirst().first?.hasPrefix("206 \"bytes=") == true, "\(log)")
        #expect(log.last == "200 \"-\" \(size)", "\(log)")
    }
}
