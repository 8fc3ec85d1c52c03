#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Paperboy
import PaperboyClient
import PaperboyDaemon
import PaperboyTestServers
import PaperboyTesting
import Testing

/// `daemon-claims.json` across restarts: a claimed file waits for a client (it does not deliver
/// itself at open); a claims file that cannot be read is kept aside and the claims are rebuilt
/// from the inbox, never read as "no claims".
@Suite("paperboy daemon: the claims file", .serialized, .timeLimit(.minutes(3)))
struct DaemonClaimsTests {
    let workspace = Workspace()

    @Test func anUnreadableClaimsFileIsKeptAsideAndTheInboxIsClaimedAgain() async throws {
        let runtime = workspace.path("runtime")
        mkdir(runtime.path, 0o700)
        let config = workspace.write("[library]\npath = \"lib\"\n[bandwidth]\nlimit = \"500KB/s\"\n", to: "paperboy.toml")
        let data = randomData(300_000, seed: 9)
        let source = workspace.write(data, to: "late.bin")
        let claims = workspace.path("lib/daemon-claims.json")
        let log = workspace.path("daemon.log")
        var daemon = try await DaemonProcess(config: config, runtime: runtime, log: log)
        let app = try await Library.connect(socket: daemon.socket)
        let asset = try await app.addIssue(name: "late", date: Date()).addAsset(AssetRequest(url: source, destinationPath: "late.bin"))
        // The app never takes the file (its delegate throws: no ACK), whether it is still
        // connected when the file is finished or not (the limiter's first burst can finish
        // 300 KB at once: with an accepting delegate the file was acknowledged and moved now
        // and then, in about one full run in ten).
        try await asset.download(delegate: Refusing())
        app.disconnect()
        let observer = try await Library.connect(socket: daemon.socket)
        try await eventually("the refused file to be finished and held") { try await observer.asset(identifier: asset.identifier)?.state == .finished }
        observer.disconnect()
        _ = await daemon.stop()
        #expect(try String(contentsOf: claims, encoding: .utf8).contains(asset.identifier))

        // A restart with the file intact, then with two unreadable ones: each time the file still
        // waits for a client (it does not deliver itself to its destination at open).
        for (number, garbage) in [(0, nil), (1, "{\"not\": \"a list"), (2, "")] {
            if let garbage { try Data(garbage.utf8).write(to: claims) }
            daemon = try await DaemonProcess(config: config, runtime: runtime, log: log)
            #expect(!FileManager.default.fileExists(atPath: workspace.path("lib/Issues/late/late.bin").path), "restart \(number)")
            if let garbage {
                let aside = workspace.path("lib/daemon-claims.json.corrupt-\(number)")
                #expect(try String(contentsOf: aside, encoding: .utf8) == garbage)
                #expect(try String(contentsOf: log, encoding: .utf8).contains("kept as daemon-claims.json.corrupt-\(number)"))
            }
            // Claimed again before any client came: the file still waits for one. (The socket
            // answers from the start; the claims are attached just after, before the first accept.)
            try await eventually("restart \(number): the claim to be recorded again",
                                 seen: (try? String(contentsOf: claims, encoding: .utf8)) ?? "no claims file") {
                (try? String(contentsOf: claims, encoding: .utf8))?.contains(asset.identifier) == true
            }
            let check = try await Library.connect(socket: daemon.socket)
            #expect(try await check.asset(identifier: asset.identifier)?.state == .finished, "restart \(number)")
            check.disconnect()
            _ = await daemon.stop()
        }

        daemon = try await DaemonProcess(config: config, runtime: runtime, log: log)
        let relaunched = try await Library.connect(socket: daemon.socket)
        let recorder = RemoteRecorder()
        for pending in try await relaunched.downloadingAssets() { try await pending.download(delegate: recorder) }
        #expect(try await relaunched.asset(identifier: asset.identifier)?.waitUntilFinished() == .delivered)
        #expect(recorder.seen.withLock { $0.finished.map(\.0) } == [asset.identifier])
        #expect(Bytes(recorder.seen.withLock { $0.finished.first?.1 } ?? Data()) == Bytes(data))
        relaunched.disconnect()
        _ = await daemon.stop()
        #expect(try String(contentsOf: claims, encoding: .utf8) == "[]")
    }
}

/// A delegate that does not take the file: the daemon keeps it waiting for the next client.
private final class Refusing: AssetDownloadDelegate {
    struct NotNow: Error {}

    func download(_ asset: AssetDownload, didFinishDownloadingTo destinationURL: URL) async throws { throw NotNow() }
}
