#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Paperboy
import PaperboyWire
import PaperboyClient
import PaperboyDaemon
import PaperboyTestServers
import PaperboyTesting
import Testing

/// systemd socket activation: the daemon serves the socket it is handed as descriptor 3
/// (`LISTEN_FDS`, `LISTEN_PID`) instead of binding its own.
@Suite("paperboy daemon: socket activation", .serialized, .timeLimit(.minutes(2)))
struct DaemonActivationTests {
    let workspace = Workspace()

    func setUp() -> (config: URL, runtime: URL) {
        let runtime = workspace.path("runtime")
        mkdir(runtime.path, 0o700)
        return (workspace.write("[library]\npath = \"lib\"\n", to: "paperboy.toml"), runtime)
    }

    @Test func theDaemonServesTheSocketSystemdPassesAndLeavesItInPlace() async throws {
        let (config, runtime) = setUp()
        let path = workspace.path("systemd/paperboy.sock")
        let listening = try DaemonSocket.listen(at: path)
        let daemon = try await DaemonProcess(config: config, runtime: runtime, log: workspace.path("daemon.log"),
                                             listening: (listening, path))
        close(listening)
        let client = try await Library.connect(socket: path)
        let source = workspace.write(randomData(50_000, seed: 3), to: "a.bin")
        let asset = try await client.addIssue(name: "activated", date: Date()).addAsset(AssetRequest(url: source, destinationPath: "a.bin"))
        try await asset.download(delegate: RemoteRecorder())
        #expect(try await asset.waitUntilFinished() == .delivered)
        // It did not bind the path it would have used without systemd.
        #expect(!FileManager.default.fileExists(atPath: runtime.appendingPathComponent("paperboy/daemon.sock").path))
        let log = try String(contentsOf: daemon.log, encoding: .utf8)
        #expect(log.contains("on \(path.path) (socket activation)"), "\(log)")
        client.disconnect()
        // It stops by itself on SIGTERM (how fast is Benchmarks/bandwidth/run.py --daemon's figure).
        _ = await daemon.stop()
        #expect(daemon.process.terminationReason == .exit && daemon.process.terminationStatus == 0)
        // systemd's socket stays for the next activation.
        #expect(FileManager.default.fileExists(atPath: path.path))
    }

    @Test func variablesForAnotherProcessAreIgnored() async throws {
        let (config, runtime) = setUp()
        let daemon = try await DaemonProcess(config: config, runtime: runtime, log: workspace.path("daemon.log"),
                                             environment: ["LISTEN_PID": "1", "LISTEN_FDS": "1"])
        let client = try await Library.connect(socket: runtime.appendingPathComponent("paperboy/daemon.sock"))
        #expect(try await client.issues().isEmpty)
        client.disconnect()
        #expect(!(try String(contentsOf: daemon.log, encoding: .utf8)).contains("socket activation"))
        _ = await daemon.stop()
    }

    @Test func aDescriptorThatIsNotAListeningSocketIsRefusedWithAClearError() async throws {
        let (config, runtime) = setUp()
        let file = workspace.write("not a socket", to: "plain.txt")
        let fd = open(file.path, O_RDONLY | O_CLOEXEC)
        defer { close(fd) }
        let log = workspace.path("daemon.log")
        do {
            let daemon = try await DaemonProcess(config: config, runtime: runtime, log: log, listening: (fd, workspace.path("none.sock")))
            Issue.record("the daemon served a plain file as its socket")
            _ = await daemon.stop(SIGKILL)
        } catch {
            let text = try String(contentsOf: log, encoding: .utf8)
            #expect(text.contains("socket activation: descriptor 3 is not a listening Unix stream socket"), "\(text)")
        }
    }
}
