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
@Suite("paperboy daemon: one bandwidth limit for every client", .serialized,
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

    /// The bytes each asset has now, and when they were read.
    func sample(_ assets: [RemoteAsset]) async throws -> (at: ContinuousClock.Instant, bytes: [Int64]) {
        var bytes: [Int64] = []
        for asset in assets { bytes.append(try await asset.refreshed().totalBytesWritten) }
        return (ContinuousClock.now, bytes)
    }

    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }

    @Test func twoClientsShareTwentyMegabytesPerSecondFairlyWithinTwoPercent() async throws {
        let nginx = try await nginx(serving: ["a.bin", "b.bin"])
        defer { nginx.stop() }
        defer { cleanUp() }
        let daemon = try await DaemonProcess(config: config(limit: "20MB/s"), runtime: runtime(), log: workspace.path("daemon.log"))
        defer { daemon.process.signal(SIGKILL) }
        var assets: [RemoteAsset] = []
        var clients: [PaperboyClient] = []
        for name in ["a", "b"] {
            let client = try await PaperboyClient.connect(socket: daemon.socket, name: "client-\(name)")
            let issue = try await client.addIssue(name: name, date: Date())
            let asset = try await issue.addAsset(AssetRequest(url: nginx.url("/\(name).bin"), destinationPath: "\(name).bin"))
            try await asset.download()
            assets.append(asset)
            clients.append(client)
        }
        #expect(try await eventually { try await sample(assets).bytes.allSatisfy { $0 > 0 } })
        // The steady middle: 2 s after both started, for 10 s (of the 20 s both files take).
        try await Task.sleep(for: .seconds(2))
        let first = try await sample(assets)
        try await Task.sleep(for: .seconds(10))
        let last = try await sample(assets)
        let seconds = Self.seconds(last.at - first.at)
        let moved = zip(last.bytes, first.bytes).map { Double($0 - $1) }
        let rate = moved.reduce(0, +) / seconds
        let shares = moved.map { $0 / max(1, moved.reduce(0, +)) }
        print(String(format: "daemon, two clients under 20MB/s: %.3f MB/s over %.2f s, shares %.3f / %.3f",
                     rate / 1e6, seconds, shares[0], shares[1]))
        #expect(abs(rate - 20e6) <= 0.02 * 20e6, "combined \(rate) B/s")
        #expect(shares.allSatisfy { (0.4...0.6).contains($0) }, "shares \(shares)")
        for client in clients { client.disconnect() }
        _ = await daemon.stop()
    }

    @Test func sighupWithANewLimitChangesTheRunningTransfersRateWithinASecond() async throws {
        let nginx = try await nginx(serving: ["big.bin"])
        defer { nginx.stop() }
        defer { cleanUp() }
        let file = config(limit: "20MB/s")
        let daemon = try await DaemonProcess(config: file, runtime: runtime(), log: workspace.path("daemon.log"))
        defer { daemon.process.signal(SIGKILL) }
        let client = try await PaperboyClient.connect(socket: daemon.socket)
        let asset = try await client.addIssue(name: "hup", date: Date())
            .addAsset(AssetRequest(url: nginx.url("/big.bin"), destinationPath: "big.bin"))
        try await asset.download()
        #expect(try await eventually { try await asset.refreshed().totalBytesWritten > 0 })
        try await Task.sleep(for: .milliseconds(500))

        func rate(over window: Duration) async throws -> Double {
            let start = try await sample([asset])
            try await Task.sleep(for: window)
            let end = try await sample([asset])
            return Double(end.bytes[0] - start.bytes[0]) / Self.seconds(end.at - start.at)
        }
        let before = try await rate(over: .seconds(2))
        _ = config(limit: "4MB/s")
        daemon.process.signal(SIGHUP)
        // A second for the reload, then two seconds at the new rate.
        try await Task.sleep(for: .seconds(1))
        let after = try await rate(over: .seconds(2))
        print(String(format: "daemon, SIGHUP 20MB/s → 4MB/s: %.2f MB/s before, %.2f MB/s from 1 s after", before / 1e6, after / 1e6))
        #expect(abs(before - 20e6) <= 0.1 * 20e6, "before: \(before) B/s")
        #expect(abs(after - 4e6) <= 0.1 * 4e6, "after: \(after) B/s")
        let log = (try? String(contentsOf: daemon.log, encoding: .utf8)) ?? ""
        #expect(log.contains("reloaded"), "\(log)")
        client.disconnect()
        _ = await daemon.stop()
    }
}
