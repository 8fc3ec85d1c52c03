#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import Foundation
import Paperboy
import PaperboyWire
import PaperboyClient
import PaperboyDaemon
import PaperboyFraming
import PaperboyTestServers
import PaperboyTesting
import Synchronization
import Testing

/// Records the callback trio of a ``AssetDownloadDelegate``.
final class RemoteRecorder: AssetDownloadDelegate {
    struct Seen {
        var resumedAt: Int64?
        var finished: [(String, Data)] = []
        var failures: [LibraryError] = []
    }

    let seen = Mutex(Seen())

    func download(_ asset: AssetDownload, didResumeAt totalBytesWritten: Int64, expectedTotalBytes: Int64?) {
        seen.withLock { $0.resumedAt = $0.resumedAt ?? totalBytesWritten }
    }

    func download(_ asset: AssetDownload, didFinishDownloadingTo destinationURL: URL) async throws {
        let data = (try? Data(contentsOf: destinationURL)) ?? Data()
        seen.withLock { $0.finished.append((asset.identifier, data)) }
    }

    func download(_ asset: AssetDownload, didFailWithError error: LibraryError) {
        seen.withLock { $0.failures.append(error) }
    }
}

@Suite("paperboy daemon, as a process", .serialized, .timeLimit(.minutes(3)))
struct DaemonTests {
    let workspace = Workspace()

    /// A runtime folder like systemd's (0700) and a configuration for `issues`.
    func setUp(_ extra: String = "") -> (config: URL, runtime: URL) {
        let runtime = workspace.path("runtime")
        mkdir(runtime.path, 0o700)
        let config = workspace.write("""
            [library]
            path = "lib"
            \(extra)
            """, to: "paperboy.toml")
        return (config, runtime)
    }

    @Test func threeAssetsAddedByOneClientAreDeliveredAndAnotherClientSeesThem() async throws {
        let (config, runtime) = setUp()
        let daemon = try await DaemonProcess(config: config, runtime: runtime, log: workspace.path("daemon.log"))
        defer { daemon.process.signal(SIGKILL) }
        var sources: [(URL, Data)] = []
        for index in 0..<3 {
            let data = randomData(200_000 + index, seed: UInt64(index + 1))
            sources.append((workspace.write(data, to: "source-\(index).bin"), data))
        }
        let first = try await Library.connect(socket: daemon.socket)
        let issue = try await first.addIssue(name: "2026-11-21", date: Date(timeIntervalSince1970: 1_790_000_000))
        var identifiers: [String] = []
        for (index, (url, _)) in sources.enumerated() {
            // A header may carry a token: no reply may show it.
            let asset = try await issue.addAsset(AssetRequest(url: url, headers: ["X-Token": "s3cret-\(index)"], destinationPath: "file-\(index).bin"))
            #expect(asset.request?.headers.isEmpty == true)
            try await asset.download()
            identifiers.append(asset.identifier)
        }
        first.disconnect()

        let second = try await Library.connect(socket: daemon.socket)
        var states: [AssetState] = []
        try await eventually("the three assets to be delivered", seen: "\(states)") {
            states = try await second.issue(named: "2026-11-21")?.assets().map(\.state) ?? []
            return states.count == 3 && states.allSatisfy { $0 == .delivered }
        }
        let shown = try #require(try await second.issue(named: "2026-11-21"))
        #expect(shown.status == .available)
        for (index, (_, data)) in sources.enumerated() {
            #expect(try Bytes(Data(contentsOf: shown.contentURL.appendingPathComponent("file-\(index).bin"))) == Bytes(data))
        }
        #expect(Set(try await shown.assets().map(\.identifier)) == Set(identifiers))
        #expect(try await shown.assets().allSatisfy { $0.request?.headers.isEmpty == true && $0.request?.url != nil })
        second.disconnect()
        _ = await daemon.stop(SIGTERM)
        #expect(daemon.process.terminationReason == .exit && daemon.process.terminationStatus == 0)
    }

    /// It stops by itself (not killed after DaemonProcess's wait budget); how fast, SIGTERM to
    /// exit, is Benchmarks/bandwidth/run.py --daemon's figure.
    @Test func sigtermDuringATransferExitsZeroByItselfWithBytesRecorded() async throws {
        let (config, runtime) = setUp()
        let daemon = try await DaemonProcess(config: config, runtime: runtime, log: workspace.path("daemon.log"))
        defer { daemon.process.signal(SIGKILL) }
        // The source stops sending after 2 MB until the daemon hangs up: the transfer is under
        // way when the SIGTERM comes, however the machine is paced.
        let data = try await offThePool { randomData(20_000_000, seed: 7) }
        let server = try FaultServer { .serving(data, for: $0, fault: .stallAfter(2_000_000)) }
        let client = try await Library.connect(socket: daemon.socket)
        let asset = try await client.addIssue(name: "slow", date: Date())
            .addAsset(AssetRequest(url: server.url("/big.bin"), destinationPath: "big.bin"))
        try await asset.download()
        var written: Int64 = 0
        try await eventually("1 MB to be written", seen: "\(written) bytes") {
            written = try await asset.status().totalBytesWritten
            return written > 1_000_000
        }
        client.disconnect()
        let took = await daemon.stop(SIGTERM)
        print("daemon: SIGTERM during a transfer → exit in \(took)")
        #expect(daemon.process.terminationReason == .exit && daemon.process.terminationStatus == 0)
        let library = try Library.openForReading(at: workspace.path("lib"))
        #expect(try await (library.asset(identifier: asset.identifier)?.bytesOnDisk ?? 0) > 1_000_000)
    }

    @Test func killNineMidTransferResumesFromTheBytesOnDiskAndAReconnectedClientGetsTheFile() async throws {
        let (config, runtime) = setUp("[bandwidth]\nlimit = \"4MB/s\"")
        let data = randomData(6_000_000, seed: 11)
        let source = workspace.write(data, to: "big.bin")
        var daemon = try await DaemonProcess(config: config, runtime: runtime, log: workspace.path("daemon.log"))
        defer { daemon.process.signal(SIGKILL) }
        let client = try await Library.connect(socket: daemon.socket)
        let asset = try await client.addIssue(name: "kill", date: Date())
            .addAsset(AssetRequest(url: source, sha256: sha256Hex(data), destinationPath: "big.bin"))
        try await asset.download(delegate: RemoteRecorder())
        try await eventually("1.5 MB to be written") { try await asset.status().totalBytesWritten > 1_500_000 }
        _ = await daemon.stop(SIGKILL)
        client.disconnect()
        let onDisk = try await Library.openForReading(at: workspace.path("lib")).asset(identifier: asset.identifier)?.bytesOnDisk ?? 0
        #expect(onDisk > 1_000_000)

        daemon = try await DaemonProcess(config: config, runtime: runtime, log: workspace.path("daemon.log"))
        let recorder = RemoteRecorder()
        let again = try await Library.connect(socket: daemon.socket)
        let found = try #require(try await again.downloadingAssets().first { $0.identifier == asset.identifier })
        try await found.download(delegate: recorder)
        #expect(try await found.waitUntilFinished() == .delivered)
        let seen = recorder.seen.withLock { $0 }
        #expect((seen.resumedAt ?? 0) >= onDisk)
        #expect(seen.finished.count == 1 && seen.finished.first?.1 == data)
        _ = await daemon.stop()
    }

    @Test func aClientThatWasNotConnectedGetsTheFileOnItsNextConnectionAndOnceAcknowledgedNeverAgain() async throws {
        // The source answers once the app is gone (the test opens its gate after `disconnect`):
        // a file finished while the app is connected goes to its own delegate, which
        // acknowledges it.
        let (config, runtime) = setUp()
        let data = randomData(300_000, seed: 5)
        let appGone = DispatchSemaphore(value: 0)
        let server = try FaultServer { request in
            if request.index == 0 { appGone.wait() }    // the connection's own thread
            return .serving(data, for: request)
        }
        defer { appGone.signal() }
        let daemon = try await DaemonProcess(config: config, runtime: runtime, log: workspace.path("daemon.log"))
        defer { daemon.process.signal(SIGKILL) }
        let app = try await Library.connect(socket: daemon.socket)
        let asset = try await app.addIssue(name: "late", date: Date())
            .addAsset(AssetRequest(url: server.url("/late.bin"), destinationPath: "late.bin"))
        try await asset.download(delegate: RemoteRecorder())
        app.disconnect()
        appGone.signal()
        // Finished, and held in the daemon's inbox for a client: not delivered (the relaunched
        // app's delegate getting it below proves it was still held).
        let observer = try await Library.connect(socket: daemon.socket)
        try await eventually("the file to be finished and held") { try await observer.asset(identifier: asset.identifier)?.state == .finished }

        let relaunched = try await Library.connect(socket: daemon.socket)
        let recorder = RemoteRecorder()
        for pending in try await relaunched.downloadingAssets() { try await pending.download(delegate: recorder) }
        #expect(try await relaunched.asset(identifier: asset.identifier)?.waitUntilFinished() == .delivered)
        #expect(recorder.seen.withLock { $0.finished.map(\.0) } == [asset.identifier])
        #expect(recorder.seen.withLock { $0.finished.first?.1 } == data)
        relaunched.disconnect()

        let later = try await Library.connect(socket: daemon.socket)
        let events = try await later.events()
        let finished = Mutex<[String]>([])
        let reader = Task {
            for await event in events {
                if case .assetStateChanged(let asset, .finished) = event { finished.withLock { $0.append(asset.identifier) } }
            }
        }
        let never = RemoteRecorder()
        try await later.asset(identifier: asset.identifier)?.download(delegate: never)
        // A file claimed after that request: the daemon sends its `finished` after any it would
        // (wrongly) send again for the acknowledged one, on the same connection, in order.
        let marker = try await later.addIssue(name: "marker", date: Date())
            .addAsset(AssetRequest(url: workspace.write(randomData(1_000, seed: 6), to: "marker.bin"), destinationPath: "marker.bin"))
        try await marker.download(delegate: RemoteRecorder())
        try await eventually("the marker file's finished event", seen: "finished events for \(finished.withLock { $0 })") {
            finished.withLock { $0.contains(marker.identifier) }
        }
        #expect(finished.withLock { $0 } == [marker.identifier], "the acknowledged file finished again")
        #expect(never.seen.withLock { $0.finished.isEmpty }, "the acknowledged file was handed over again")
        later.disconnect()
        reader.cancel()
        observer.disconnect()
        _ = await daemon.stop()
    }

    @Test func theSocketIsPrivateAndOtherUsersAreRefused() async throws {
        let (config, runtime) = setUp()
        let daemon = try await DaemonProcess(config: config, runtime: runtime, log: workspace.path("daemon.log"))
        defer { daemon.process.signal(SIGKILL) }
        var info = stat()
        #expect(stat(daemon.socket.path, &info) == 0)
        #expect(info.st_mode & 0o777 == 0o600)
        #expect(stat(daemon.socket.deletingLastPathComponent().path, &info) == 0)
        #expect(info.st_mode & 0o777 == 0o700)
        // The peer check, with a fake uid for the other user.
        #expect(DaemonSocket.admits(peer: getuid(), daemon: getuid()))
        #expect(!DaemonSocket.admits(peer: getuid() &+ 1, daemon: getuid()))
        #expect(!DaemonSocket.admits(peer: 0, daemon: getuid() == 0 ? 1000 : getuid()))
        #expect(!DaemonSocket.admits(peer: nil, daemon: getuid()))
        var pair: [Int32] = [-1, -1]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair) == 0)
        #expect(DaemonSocket.peerUID(pair[0]) == getuid())
        close(pair[0])
        close(pair[1])
        _ = await daemon.stop()
    }

    /// Sends raw bytes on a fresh connection and returns the frames the daemon answered until it
    /// closed the connection or 100 ms passed without a frame: for random frames, whose answers
    /// are not counted (what is asserted is that the daemon lives). Answers that are asserted are
    /// read with ``DaemonHostileJSONTests/exchange(_:_:answers:)``, which waits for them.
    func exchange(_ socket: URL, _ bytes: Data) throws -> [Frame] {
        let fd = try DaemonSocket.connect(to: socket)
        #expect(fd >= 0)
        defer { close(fd) }
        try? FrameWriter.write(bytes, to: fd, isSocket: true)
        var reader = FrameReader()
        var frames: [Frame] = []
        let wait: (Int32) throws(FrameIOError) -> Void = { fd throws(FrameIOError) in
            var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            if poll(&descriptor, 1, 100) <= 0 { throw .timedOut(.milliseconds(100)) }
        }
        while let frame = try? reader.next(from: fd, maxLength: { _ in 1 << 20 }, wait: wait) { frames.append(frame) }
        return frames
    }

    func errorCode(_ frame: Frame?) -> String? {
        guard let frame, frame.kind == "ERROR" else { return nil }
        return (try? JSONSerialization.jsonObject(with: frame.payload) as? [String: Any])?["code"] as? String
    }

    @Test func malformedOversizedAndRandomFramesGetErrorsAndNeverCrashTheDaemon() async throws {
        let (config, runtime) = setUp()
        let daemon = try await DaemonProcess(config: config, runtime: runtime, log: workspace.path("daemon.log"))
        defer { daemon.process.signal(SIGKILL) }
        let hello = Frame.encode("HELLO", Data(#"{"protocols":[1]}"#.utf8))
        // Each answer waited for (a loaded machine may take its time), not a 100 ms window.
        let exchange = { (bytes: Data, count: Int) throws -> [Frame] in
            try DaemonHostileJSONTests.exchange(daemon.socket, bytes, answers: count)
        }
        #expect(errorCode(try exchange(Data("not a frame at all, no newline in sight....\n".utf8), 1).first) == "malformed-frame")
        #expect(errorCode(try exchange(Data("HELLO 9999999999\n".utf8), 1).first) == "frame-too-large")
        #expect(errorCode(try exchange(Frame.encode("STATUS", Data(#"{"id":1}"#.utf8)), 1).first) == "not-negotiated")
        #expect(errorCode(try exchange(Frame.encode("HELLO", Data(#"{"protocols":[7]}"#.utf8)), 1).first) == "unsupported-version")
        let answers = try exchange(hello + Frame.encode("STATUS", Data("{bad".utf8))
            + Frame.encode("STATUS", Data(#"{"id":-5}"#.utf8)) + Frame.encode("ADDISSUE", Data(#"{"id":3,"name":"x","date":"nope"}"#.utf8))
            + Frame.encode("FROBNICATE", Data(#"{"id":4}"#.utf8)) + Frame.encode("ACK", Data(#"{"id":5,"asset":"nothing"}"#.utf8))
            + Frame.encode("STATUS", Data(#"{"id":6}"#.utf8)), 7)
        #expect(answers.map(\.kind) == ["HELLO", "ERROR", "ERROR", "ERROR", "ERROR", "ERROR", "OK"])
        #expect(answers.dropFirst().prefix(5).map(errorCode) == ["bad-request", "bad-request", "bad-request", "unknown-kind", "not-pending"])

        let seed = UInt64.random(in: 1...UInt64.max)
        print("daemon frame fuzz: seed \(seed)")
        var generator = SplitMix64(seed: seed)
        let kinds = ["HELLO", "ADDISSUE", "ADDASSET", "ADDASSETS", "DOWNLOAD", "PAUSE", "RESUME", "CANCEL", "STATUS", "SUBSCRIBE", "ACK", "RELOAD", "X",
                     "SHELF", "ASSETS", "READ", "PURGE"]
        for _ in 0..<60 {
            var bytes = Data()
            if Bool.random(using: &generator) { bytes += hello }
            for _ in 0..<Int.random(in: 1...4, using: &generator) {
                switch Int.random(in: 0..<4, using: &generator) {
                case 0: bytes += Data((0..<Int.random(in: 1...80, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) })
                case 1:
                    let fields = ["\"id\":\(Int64.random(in: Int64.min...Int64.max, using: &generator))", "\"name\":\"\u{1B}[31m\"",
                                  "\"date\":\"2026-01-01T00:00:00Z\"", "\"asset\":\"../../etc\"", "\"issue\":\"x\"",
                                  "\"request\":{\"url\":\"file:///etc/hostname\",\"destination_path\":\"../../escape\"}", "\"protocols\":[1e308]",
                                  "\"assets\":[{\"request\":{\"url\":\"file:///etc/hostname\",\"destination_path\":\"../../escape\"}}]",
                                  "\"assets\":[{\"request\":{\"url\":\"file:///etc/hostname\"},\"user_info\":[[[]]]}]", "\"download\":true",
                                  "\"after\":\"-9:\\u0000\"", "\"offset\":9223372036854775807", "\"keep\":-1", "\"budget_bytes\":-5"]
                    let payload = "{" + fields.shuffled(using: &generator).prefix(Int.random(in: 0...fields.count, using: &generator)).joined(separator: ",") + "}"
                    bytes += Frame.encode(kinds.randomElement(using: &generator)!, Data(payload.utf8))
                case 2: bytes += Data("\(kinds.randomElement(using: &generator)!) \(Int.random(in: 0...Int(Int32.max), using: &generator))\n".utf8)
                default: bytes += Frame.encode(kinds.randomElement(using: &generator)!, Data(repeating: UInt8.random(in: 0...255, using: &generator), count: Int.random(in: 0...300, using: &generator)))
                }
            }
            _ = try self.exchange(daemon.socket, bytes)
            #expect(daemon.process.isRunning, "seed \(seed)")
            if !daemon.process.isRunning { return }
        }
        let status = try exchange(hello + Frame.encode("STATUS", Data(#"{"id":1}"#.utf8)), 2)
        #expect(status.map(\.kind) == ["HELLO", "OK"])
        #expect(!FileManager.default.fileExists(atPath: workspace.path("escape").path))
        _ = await daemon.stop()
    }

    /// `ADDASSETS` checks every asset before it adds any (issue 27): a batch with one bad asset,
    /// or none, or for an unknown issue, gets an error with its id and adds nothing; a good one
    /// adds its assets in one transaction, answered with their ids in order.
    @Test func aBadADDASSETSGetsAnErrorWithItsIDAndAddsNothing() async throws {
        let (config, runtime) = setUp()
        let daemon = try await DaemonProcess(config: config, runtime: runtime, log: workspace.path("daemon.log"))
        defer { daemon.process.signal(SIGKILL) }
        let good = #"{"request":{"url":"file:///etc/hostname","destination_path":"a"}}"#
        let tooLarge = #"{"request":{"url":"file:///etc/hostname"},"user_info":["# + Array(repeating: "\"" + String(repeating: "u", count: 1_000) + "\"", count: 70)
            .joined(separator: ",") + "]}"
        let batches = [
            #"{"id":2,"issue":"x","assets":[]}"#,
            #"{"id":3,"issue":"x","assets":[\#(good),{"request":{"url":"file:///etc/hostname","destination_path":"../../escape"}}]}"#,
            #"{"id":4,"issue":"nope","assets":[\#(good)]}"#,
            #"{"id":5,"issue":"x","assets":[\#(good),{"request":{"destination_path":"b"}}]}"#,
            #"{"id":6,"issue":"x","assets":[\#(good),\#(tooLarge)]}"#,
        ]
        var frames = Frame.encode("HELLO", Data(#"{"protocols":[1]}"#.utf8))
            + Frame.encode("ADDISSUE", Data(#"{"id":1,"name":"x","date":"2026-11-21T00:00:00Z"}"#.utf8))
        for batch in batches { frames += Frame.encode("ADDASSETS", Data(batch.utf8)) }
        frames += Frame.encode("STATUS", Data(#"{"id":7,"issue":"x"}"#.utf8))
        frames += Frame.encode("ADDASSETS", Data(#"{"id":8,"issue":"x","assets":[\#(good),{"request":{"url":"file:///etc/hostname","destination_path":"b"},"user_info":{"n":2}}]}"#.utf8))
        frames += Frame.encode("STATUS", Data(#"{"id":9,"issue":"x"}"#.utf8))
        let (socket, sent) = (daemon.socket, frames)
        let answers = try await offThePool { try DaemonHostileJSONTests.exchange(socket, sent, answers: 10) }
        #expect(daemon.process.isRunning)
        let objects = answers.map { (try? JSONSerialization.jsonObject(with: $0.payload)) as? [String: Any] ?? [:] }
        let shown = answers.map { "\($0.kind) \(String(decoding: $0.payload, as: UTF8.self).prefix(300))" }
        #expect(answers.map(\.kind) == ["HELLO", "OK", "ERROR", "ERROR", "ERROR", "ERROR", "ERROR", "OK", "OK", "OK"], "\(shown)")
        guard answers.count == 10 else { return }
        #expect(objects[2...6].map { $0["id"] as? Int } == [2, 3, 4, 5, 6], "\(shown)")
        #expect(objects[2...6].map { $0["code"] as? String } == ["bad-request", "invalid-path", "issue-not-found", "bad-request", "user-info-too-large"],
                "\(shown)")
        #expect(objects[2]["message"] as? String == "ADDASSETS assets: expected 1 to 4096 assets, got 0")
        #expect((objects[3]["message"] as? String)?.contains("ADDASSETS assets[1].request.destination_path") == true, "\(shown[3])")
        #expect((objects[3]["message"] as? String)?.contains("../../escape") == true, "\(shown[3])")
        #expect(objects[5]["message"] as? String == "ADDASSETS: missing field 'assets[1].request.url'", "\(shown[5])")
        // Nothing of the refused batches was added.
        let before = (objects[7]["issue"] as? [String: Any])?["assets"] as? [Any]
        #expect(before?.isEmpty == true, "\(shown[7])")
        let added = try #require(objects[8]["assets"] as? [String])
        #expect(objects[8]["id"] as? Int == 8)
        let listed = (objects[9]["issue"] as? [String: Any])?["assets"] as? [[String: Any]] ?? []
        #expect(listed.map { $0["id"] as? String } == added && added.count == 2, "\(shown[9])")
        #expect(listed.map { ($0["request"] as? [String: Any])?["destination_path"] as? String } == ["a", "b"])
        #expect(!FileManager.default.fileExists(atPath: workspace.path("escape").path))
        _ = await daemon.stop()
    }
}
