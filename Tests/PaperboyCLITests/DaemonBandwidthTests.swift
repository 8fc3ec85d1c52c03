#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Paperboy
import PaperboyClient
import PaperboyTestServers
import PaperboyTesting
import Testing

/// One limiter for every client of the daemon, changed live by SIGHUP: measured on transfers
/// from nginx, from the daemon's own byte counts (`STATUS` of one asset reads the running
/// transfer's count, not a checkpoint).
@Suite("paperboy daemon: one bandwidth limit for every client", .serialized, .timeLimit(.minutes(3)),
       .enabled(if: NginxServer.binary != nil || ProcessInfo.processInfo.environment["CI"] == "true", "needs nginx"))
struct DaemonBandwidthTests {
    let workspace = Workspace()
    static let size: Int64 = 200_000_000
    /// The library, in memory where /dev/shm exists: 300 MB written at 20 MB/s to the disk slowed
    /// other tests' process starts and fsyncs past their limits (a 300 ms timeout took 7 s).
    let library: URL
    let memoryFolder: URL?

    init() {
        var shm = stat()
        if stat("/dev/shm", &shm) == 0, shm.st_mode & S_IFMT == S_IFDIR, access("/dev/shm", W_OK) == 0 {
            let folder = URL(fileURLWithPath: "/dev/shm/paperboy-bandwidth-\(UUID().uuidString)")
            mkdir(folder.path, 0o700)
            memoryFolder = folder
            library = folder.appendingPathComponent("lib")
        } else {
            memoryFolder = nil
            library = workspace.path("lib")
        }
    }

    /// Removes the in-memory library (the workspace removes itself).
    func cleanUp() {
        if let memoryFolder { try? FileManager.default.removeItem(at: memoryFolder) }
    }

    /// nginx serving sparse `size`-byte files named `names` (a hole reads as zeros: nothing to
    /// generate or keep).
    func nginx(serving names: [String]) async throws -> NginxServer {
        let binary = try #require(NginxServer.binary, "nginx is required under CI")
        let nginx = try await offThePool { try NginxServer(binary: binary) }
        for name in names {
            let fd = open(nginx.documentRoot.appendingPathComponent(name).path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
            #expect(fd >= 0 && ftruncate(fd, off_t(Self.size)) == 0)
            close(fd)
        }
        return nginx
    }

    func config(limit: String) -> URL {
        workspace.write("""
            [library]
            path = "\(library.path)"
            sync_to_disk = false
            [scheduler]
            max_per_host = 4
            [bandwidth]
            limit = "\(limit)"
            """, to: "paperboy.toml")
    }

    func runtime() -> URL {
        let runtime = workspace.path("runtime")
        mkdir(runtime.path, 0o700)
        return runtime
    }

    /// The bytes each asset has, and when the daemon could have read them: between the moment
    /// the first request left and the moment the last reply came back.
    struct Sample {
        var sent: ContinuousClock.Instant
        var received: ContinuousClock.Instant
        var bytes: [Int64]
    }

    func sample(_ assets: [AssetDownload]) async throws -> Sample {
        let sent = ContinuousClock.now
        var bytes: [Int64] = []
        for asset in assets { bytes.append(try await asset.status().totalBytesWritten) }
        return Sample(sent: sent, received: ContinuousClock.now, bytes: bytes)
    }

    /// The rates the bytes moved between two samples may stand for, slowest to fastest: the
    /// window is known only to within the samples' round trips, which a loaded machine makes long.
    static func rates(from first: Sample, to last: Sample) -> ClosedRange<Double> {
        let moved = Double(zip(last.bytes, first.bytes).map { $0 - $1 }.reduce(0, +))
        let longest = seconds(last.received - first.sent)
        let shortest = max(seconds(last.sent - first.received), 0.001)
        return (moved / longest)...(moved / shortest)
    }

    /// Whether `rate` can be within `tolerance` of `target`: the measured range and the tolerated one meet.
    static func meets(_ rate: ClosedRange<Double>, _ target: Double, within tolerance: Double) -> Bool {
        rate.overlaps((target * (1 - tolerance))...(target * (1 + tolerance)))
    }

    /// Waits `duration` of real time: a measurement window, not a wait for an event.
    func measure(for duration: Duration) async throws {
        try await Task.sleep(for: duration)
    }

    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }

    func log(_ daemon: DaemonProcess) -> String { (try? String(contentsOf: daemon.log, encoding: .utf8)) ?? "" }

    /// The limiter is an upper bound the daemon keeps exactly; what a loaded machine achieves
    /// under it may fall short. So the combined rate may not exceed 20 MB/s by more than 2 %,
    /// must reach 75 % of it (a limiter that throttles far below its limit fails), and the two
    /// clients share it within 40/60.
    @Test func twoClientsShareTwentyMegabytesPerSecondAtMostTwoPercentOverEachTakingFortyToSixtyPercent() async throws {
        let nginx = try await nginx(serving: ["a.bin", "b.bin"])
        defer { nginx.stop() }
        defer { cleanUp() }
        let daemon = try await DaemonProcess(config: config(limit: "20MB/s"), runtime: runtime(), log: workspace.path("daemon.log"))
        defer { daemon.process.signal(SIGKILL) }
        var assets: [AssetDownload] = []
        var clients: [Library] = []
        for name in ["a", "b"] {
            let client = try await Library.connect(socket: daemon.socket, name: "client-\(name)")
            let issue = try await client.addIssue(name: name, date: Date())
            let asset = try await issue.addAsset(AssetRequest(url: nginx.url("/\(name).bin"), destinationPath: "\(name).bin"))
            try await asset.download()
            assets.append(asset)
            clients.append(client)
        }
        // The steady middle: from 2 MB into each transfer, for 10 s (of the 20 s both files take).
        try await eventually("both transfers to be under way") { try await sample(assets).bytes.allSatisfy { $0 > 2_000_000 } }
        let first = try await sample(assets)
        try await measure(for: .seconds(10))
        let last = try await sample(assets)
        let rate = Self.rates(from: first, to: last)
        let moved = zip(last.bytes, first.bytes).map { Double($0 - $1) }
        let shares = moved.map { $0 / max(1, moved.reduce(0, +)) }
        print(String(format: "daemon, two clients under 20MB/s: %.3f–%.3f MB/s, shares %.3f / %.3f",
                     rate.lowerBound / 1e6, rate.upperBound / 1e6, shares[0], shares[1]))
        #expect(rate.lowerBound <= 20e6 * 1.02, "combined \(rate) B/s: over the limit")
        #expect(rate.upperBound >= 20e6 * 0.75, "combined \(rate) B/s: far under the limit")
        #expect(shares.allSatisfy { (0.4...0.6).contains($0) }, "shares \(shares)")
        for client in clients { client.disconnect() }
        _ = await daemon.stop()
    }

    /// The rate is measured over 4 s from the moment the daemon says it reloaded (its log): the
    /// old limit's rate is 20 MB/s, the new one's 4 MB/s. A loaded machine may fall short of a
    /// limit but never exceeds it: after the reload the rate must be under a third of the old
    /// limit and within 15 % of the new one (a 2 s window saw 0.74 MB/s off on a loaded
    /// machine, most of it the samples' timing, which ``rates(from:to:)`` now bounds).
    @Test func sighupWithANewLimitChangesTheRunningTransfersRateWithinASecond() async throws {
        let nginx = try await nginx(serving: ["big.bin"])
        defer { nginx.stop() }
        defer { cleanUp() }
        let file = config(limit: "20MB/s")
        let daemon = try await DaemonProcess(config: file, runtime: runtime(), log: workspace.path("daemon.log"))
        defer { daemon.process.signal(SIGKILL) }
        let client = try await Library.connect(socket: daemon.socket)
        let asset = try await client.addIssue(name: "hup", date: Date())
            .addAsset(AssetRequest(url: nginx.url("/big.bin"), destinationPath: "big.bin"))
        try await asset.download()
        try await eventually("the transfer to be under way") { try await asset.status().totalBytesWritten > 2_000_000 }

        let start = try await sample([asset])
        try await measure(for: .seconds(2))
        let before = Self.rates(from: start, to: try await sample([asset]))
        _ = config(limit: "4MB/s")
        daemon.process.signal(SIGHUP)
        try await eventually("the daemon to reload", seen: log(daemon)) { log(daemon).contains("reloaded") }
        let reloaded = try await sample([asset])
        try await measure(for: .seconds(4))
        let after = Self.rates(from: reloaded, to: try await sample([asset]))
        print(String(format: "daemon, SIGHUP 20MB/s → 4MB/s: %.2f–%.2f MB/s before, %.2f–%.2f MB/s after the reload",
                     before.lowerBound / 1e6, before.upperBound / 1e6, after.lowerBound / 1e6, after.upperBound / 1e6))
        #expect(before.lowerBound <= 20e6 * 1.1 && before.upperBound >= 20e6 * 0.5, "before: \(before) B/s")
        #expect(after.lowerBound < 20e6 / 3, "after: \(after) B/s, not under the old limit")
        #expect(Self.meets(after, 4e6, within: 0.15), "after: \(after) B/s")
        client.disconnect()
        _ = await daemon.stop()
    }
}
