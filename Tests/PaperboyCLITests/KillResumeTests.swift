import Foundation
import PaperboyTestServers
import PaperboyTesting
import Testing

/// Kills `paperboy sync` with SIGKILL during a download from nginx and measures, at the server,
/// where the next run continues: in the same boot, from the partial file's length at the kill
/// (the kernel kept every byte the process wrote); after a reboot, from the durable checkpoint.
@Suite("kill -9 resume, measured at the server", .serialized, .timeLimit(.minutes(3)), .enabled(if: NginxServer.binary != nil))
struct KillResumeTests {
    let workspace = Workspace()
    let size = 40_000_000

    /// One request as nginx logged it: where its range started and the body bytes it sent.
    struct Served {
        var start: Int
        var bytes: Int
    }

    /// The requests nginx served, in order (`STATUS "RANGE" BYTES` lines).
    func served(_ nginx: NginxServer) -> [Served] {
        nginx.accessLog.compactMap { line in
            let fields = line.split(separator: " ")
            guard fields.count == 3, let bytes = Int(fields[2]) else { return nil }
            let range = fields[1].trimmingCharacters(in: CharacterSet(charactersIn: "\""))
            let start = range.hasPrefix("bytes=") ? Int(range.dropFirst(6).prefix { $0 != "-" }) ?? -1 : 0
            return Served(start: start, bytes: bytes)
        }
    }

    /// nginx serving `size` random bytes at 16 MB/s, and a config syncing them with a SHA-256.
    func slowSource() async throws -> (NginxServer, Data, URL) {
        let binary = try #require(NginxServer.binary)
        let nginx = try await offThePool { try NginxServer(binary: binary, slowRate: "16m") }
        let size = self.size
        let data = try await offThePool { randomData(size, seed: UInt64.random(in: 1...UInt64.max)) }
        try data.write(to: nginx.documentRoot.appendingPathComponent("big.bin"))
        let config = workspace.write("""
            [library]
            path = "lib"
            [[issues]]
            name = "kill"
            date = 2026-11-21
              [[issues.assets]]
              url = "\(nginx.url("/slow/big.bin").absoluteString)"
              sha256 = "\(sha256Hex(data))"
              path = "big.bin"
            """, to: "paperboy.toml")
        return (nginx, data, config)
    }

    /// Runs `paperboy sync` in boot `boot` and kills it `delay` microseconds (by default a random
    /// 0–0.4 s) after it wrote bytes past `previous` (so that every killed run made its request).
    /// Returns the partial file's length and the recorded byte count after the kill, or nil if the
    /// run ended by itself.
    func killedSync(_ config: URL, boot: String, past previous: Int = 0,
                    delay: useconds_t = .random(in: 0...400_000)) async throws -> (onDisk: Int, recorded: Int)? {
        let library = workspace.path("lib")
        let process = try await CLI.runKilled(
            ["sync", "-q", "--config", config.path], after: delay,
            once: { CLI.partialBytes(in: library) > previous }, environment: ["PAPERBOY_BOOT_ID": boot])
        guard process.terminationReason == .uncaughtSignal else { return nil }
        let status = try await CLI.run(["status", "--json", "--config", config.path])
        let json = try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any]
        let asset = ((json?["issues"] as? [[String: Any]])?.first?["assets"] as? [[String: Any]])?.first ?? [:]
        let id = try #require(asset["id"] as? String)
        let partial = workspace.path("lib/.partial/\(id)")
        let onDisk = try #require(FileManager.default.attributesOfItem(atPath: partial.path)[.size] as? Int)
        return (onDisk, asset["bytesWritten"] as? Int ?? 0)
    }

    func finishSync(_ config: URL, boot: String, data: Data) async throws {
        let last = try await CLI.run(["sync", "--config", config.path], environment: ["PAPERBOY_BOOT_ID": boot])
        #expect(last.status == 0, "\(last.stderr)")
        #expect(try sha256Hex(ofFileAt: workspace.path("lib/Issues/kill/big.bin")) == sha256Hex(data))
    }

    @Test func inTheSameBootAKilledSyncResumesFromThePartialFilesLength() async throws {
        let (nginx, data, config) = try await slowSource()
        defer { nginx.stop() }
        var lengths: [Int] = []
        for _ in 0..<3 {
            guard let killed = try await killedSync(config, boot: "boot-a", past: lengths.last ?? 0) else { break }
            lengths.append(killed.onDisk)
        }
        try await finishSync(config, boot: "boot-a", data: data)
        let requests = served(nginx)
        try #require(requests.count == lengths.count + 1, "\(nginx.accessLog)")
        var waste: [Int] = []
        for (kill, length) in lengths.enumerated() {
            // Nothing written before the kill is fetched again.
            #expect(requests[kill + 1].start == length, "run \(kill + 2) continued at \(requests[kill + 1].start), \(length) bytes were on disk")
            waste.append(requests[kill].start + requests[kill].bytes - requests[kill + 1].start)
        }
        // Only what was in flight is sent again: what nginx had handed to the socket buffers and
        // the process had not written yet. That is bounded by the kernel's buffers, not by the
        // test (a loaded machine that stalls the reader lets them fill: 6.9 MB was seen), so it
        // is reported here and measured in Benchmarks/kill, not asserted.
        print("kill -9 resume: \(lengths.count) kills, bytes sent again per kill: \(waste)")
        #expect(lengths.count >= 1)
    }

    /// Killed as soon as its first bytes are seen in the partial file (within milliseconds, long
    /// before the store's first batch): the validator that makes them resumable was committed
    /// before them (issue 31: against caddy, a kill in the first 60 ms restarted from 0).
    @Test func aKillAtTheFirstBytesWrittenResumesFromThem() async throws {
        let (nginx, data, config) = try await slowSource()
        defer { nginx.stop() }
        let killed = try #require(try await killedSync(config, boot: "boot-a", delay: 0))
        try await finishSync(config, boot: "boot-a", data: data)
        let requests = served(nginx)
        try #require(requests.count == 2, "\(nginx.accessLog)")
        #expect(requests[1].start == killed.onDisk, "continued at \(requests[1].start), \(killed.onDisk) bytes were on disk")
        #expect(killed.onDisk > 0)
    }

    @Test func afterARebootAKilledSyncResumesFromTheDurableCheckpoint() async throws {
        let (nginx, data, config) = try await slowSource()
        defer { nginx.stop() }
        let killed = try #require(try await killedSync(config, boot: "boot-1"))
        try await finishSync(config, boot: "boot-2", data: data)
        let requests = served(nginx)
        try #require(requests.count == 2, "\(nginx.accessLog)")
        // The bytes past the last checkpoint may not have reached the disk before a reboot.
        #expect(requests[1].start == killed.recorded)
        #expect(killed.recorded < killed.onDisk)
    }
}
