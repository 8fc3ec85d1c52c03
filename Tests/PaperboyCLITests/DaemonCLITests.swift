#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Paperboy
import PaperboyClient
import PaperboyDaemon
import PaperboyFraming
import PaperboyTestServers
import PaperboyTesting
import PaperboyWire
import Testing

/// The `paperboy` commands with a daemon serving their library: they go through it (real
/// daemon processes, real nginx), and without one, or with a socket not to be trusted, they
/// behave as they say.
@Suite("paperboy commands through a daemon", .serialized, .timeLimit(.minutes(4)),
       .enabled(if: NginxServer.binary != nil || ProcessInfo.processInfo.environment["CI"] == "true"))
struct DaemonCLITests {
    let workspace = Workspace()

    /// A runtime folder (0700, as systemd makes it) and the daemon's configuration (no issues).
    func setUp() -> (config: URL, runtime: URL) {
        let runtime = workspace.path("runtime")
        mkdir(runtime.path, 0o700)
        let config = workspace.write("[library]\npath = \"lib\"\n", to: "daemon.toml")
        return (config, runtime)
    }

    func nginx(slowRate: String = "2m") async throws -> NginxServer {
        let binary = try #require(NginxServer.binary, "nginx is needed (CI=true)")
        return try await offThePool { try NginxServer(binary: binary, slowRate: slowRate) }
    }

    func run(_ arguments: [String], runtime: URL) async throws -> CLIResult {
        try await CLI.run(arguments, environment: ["XDG_RUNTIME_DIR": runtime.path, "PAPERBOY_NETWORK": "wired"])
    }

    /// The listings `status` and `issues` print, text and JSON.
    func listings(_ config: URL, runtime: URL) async throws -> [String] {
        var outputs: [String] = []
        for arguments in [["status"], ["status", "--json"], ["issues"], ["issues", "--json"]] {
            let result = try await run(arguments + ["--config", config.path], runtime: runtime)
            #expect(result.status == 0, "\(arguments): \(result.stderr)")
            outputs.append(result.stdout)
        }
        return outputs
    }

    @Test func threeAssetsAddedWithTheCLIAreFinishedByTheDaemonAndItsListingsMatchTheInProcessOnes() async throws {
        let server = try await nginx()
        defer { server.stop() }
        var sources: [Data] = []
        for index in 0..<3 {
            let data = randomData(300_000 + index, seed: UInt64(index + 21))
            try data.write(to: server.documentRoot.appendingPathComponent("part-\(index).bin"))
            sources.append(data)
        }
        let (config, runtime) = setUp()
        let daemon = try await DaemonProcess(config: config, runtime: runtime, log: workspace.path("daemon.log"))
        defer { daemon.process.signal(SIGKILL) }
        for index in 0..<3 {
            let result = try await run(["add", server.url("/slow/part-\(index).bin").absoluteString, "--issue", "2026-11-21",
                                        "--date", "2026-11-21", "-v", "--config", config.path], runtime: runtime)
            #expect(result.status == 0, "\(result.stderr)")
            #expect(result.stderr.contains("using the daemon on \(daemon.socket.path)"), "\(result.stderr)")
            #expect(result.stdout.contains("1 of 1 asset(s) delivered"), "\(result.stdout)")
        }
        #expect(server.accessLog.count == 3, "\(server.accessLog)")
        for (index, data) in sources.enumerated() {
            let delivered = workspace.path("lib/Issues/2026-11-21/part-\(index).bin")
            #expect(try Bytes(Data(contentsOf: delivered)) == Bytes(data))
        }
        // Another client sees them delivered.
        let other = try await Library.connect(socket: daemon.socket)
        let assets = try await other.issue(named: "2026-11-21")?.assets() ?? []
        #expect(assets.count == 3 && assets.allSatisfy { $0.state == .delivered })
        other.disconnect()

        // The limiter's statistics are recorded about once a second while bytes flow: wait for
        // the record of every byte (none can follow), so that both listings show the same one.
        var granted: Int64 = 0
        try await eventually("the limiter's statistics to record all \(sources.map(\.count).reduce(0, +)) bytes", seen: "\(granted)") {
            let status = try await run(["status", "--json", "--config", config.path], runtime: runtime)
            let json = try? JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any]
            granted = ((json?["bandwidth"] as? [String: Any])?["bytesGranted"] as? NSNumber)?.int64Value ?? 0
            return granted >= Int64(sources.map(\.count).reduce(0, +))
        }
        let throughDaemon = try await listings(config, runtime: runtime)
        #expect(throughDaemon[0].contains("part-2.bin  delivered  300.0 kB"), "\(throughDaemon[0])")
        _ = await daemon.stop()
        #expect(daemon.process.terminationStatus == 0)
        let inProcess = try await listings(config, runtime: runtime)
        for (remote, local) in zip(throughDaemon, inProcess) { #expect(remote == local) }
    }

    @Test func ctrlCDetachesASyncAndTheDaemonFinishesTheFile() async throws {
        let server = try await nginx(slowRate: "1m")
        defer { server.stop() }
        let data = randomData(2_500_000, seed: 33)
        try data.write(to: server.documentRoot.appendingPathComponent("big.bin"))
        let (daemonConfig, runtime) = setUp()
        let config = workspace.write("""
            [library]
            path = "lib"
            [[issues]]
            name = "detach"
            date = 2026-11-21
              [[issues.assets]]
              url = "\(server.url("/slow/big.bin").absoluteString)"
              sha256 = "\(sha256Hex(data))"
              path = "big.bin"
            """, to: "paperboy.toml")
        let daemon = try await DaemonProcess(config: daemonConfig, runtime: runtime, log: workspace.path("daemon.log"))
        defer { daemon.process.signal(SIGKILL) }
        let log = workspace.path("sync.log")
        let fd = open(log.path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        var environment = ProcessInfo.processInfo.environment
        environment["XDG_RUNTIME_DIR"] = runtime.path
        let sync = try ChildProcess(CLI.executable.path, ["sync", "-v", "--config", config.path], environment: environment,
                                    standardError: fd)
        close(fd)
        defer { sync.signal(SIGKILL) }
        let client = try await Library.connect(socket: daemon.socket)
        try await eventually("the daemon to start the sync's download") {
            let asset = try await client.issue(named: "detach")?.assets().first
            return (asset?.totalBytesWritten ?? 0) > 0 || asset?.state == .downloading
        }
        sync.signal(SIGINT)
        await sync.exited()
        #expect(sync.terminationReason == .exit && sync.terminationStatus == 130)
        let said = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
        #expect(said.contains("using the daemon") && said.contains("detached; the daemon goes on downloading"), "\(said)")
        let asset = try #require(try await client.issue(named: "detach")?.assets().first)
        #expect(asset.state != .delivered, "the file was finished before Ctrl-C: nothing was shown")
        #expect(try await asset.waitUntilFinished() == .delivered)
        #expect(try Bytes(Data(contentsOf: workspace.path("lib/Issues/detach/big.bin"))) == Bytes(data))
        client.disconnect()
        _ = await daemon.stop()
    }

    @Test func aSyncThroughTheDaemonReportsFailuresSummaryAndExitCodeAsInProcessAndLeavesTheHookToTheDaemon() async throws {
        let server = try await nginx()
        defer { server.stop() }
        for index in 0..<3 {
            try randomData(20_000 + index, seed: UInt64(index + 40)).write(to: server.documentRoot.appendingPathComponent("good-\(index).bin"))
        }
        let hook = workspace.write("#!/bin/sh\necho \"hook: $PAPERBOY_ISSUE\"\n", to: "hooks/echo.sh")
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: hook.path)
        // The same issues in two libraries: one served by the daemon, one opened in-process.
        func config(library: String) -> URL {
            workspace.write("""
                [library]
                path = "\(library)"
                [hooks]
                on_issue_available = ["hooks/echo.sh"]
                [[issues]]
                name = "whole"
                date = 2026-11-20
                  [[issues.assets]]
                  url = "\(server.url("/good-0.bin").absoluteString)"
                  path = "a.bin"
                  [[issues.assets]]
                  url = "\(server.url("/good-1.bin").absoluteString)"
                  path = "b.bin"
                [[issues]]
                name = "broken"
                date = 2026-11-21
                  [[issues.assets]]
                  url = "\(server.url("/good-2.bin").absoluteString)"
                  path = "c.bin"
                  [[issues.assets]]
                  url = "\(server.url("/missing.bin").absoluteString)"
                  path = "missing.bin"
                """, to: "\(library).toml")
        }
        let (daemonConfig, runtime) = setUp()
        let daemon = try await DaemonProcess(config: daemonConfig, runtime: runtime, log: workspace.path("daemon.log"))
        defer { daemon.process.signal(SIGKILL) }
        let remote = try await run(["sync", "--config", config(library: "lib").path], runtime: runtime)
        let local = try await run(["sync", "--config", config(library: "local").path], runtime: runtime)
        // `status --json` gives the failure's reason (its code) both ways: through the daemon, in process.
        var reasons: [String?] = []
        for library in ["lib", "local"] {
            let status = try await run(["status", "--json", "--config", config(library: library).path], runtime: runtime)
            #expect(status.status == 0, "\(status.stderr)")
            let document = try? JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any]
            let assets = (document?["issues"] as? [[String: Any]])?.flatMap { $0["assets"] as? [[String: Any]] ?? [] } ?? []
            let failed = assets.first { $0["path"] as? String == "missing.bin" }
            #expect(failed?["state"] as? String == "failed", "\(library): \(status.stdout)")
            reasons.append(failed?["reason"] as? String)
        }
        #expect(reasons == ["not-found", "not-found"], "through the daemon, then in process")
        _ = await daemon.stop()
        // Timings differ; every line else is the same.
        func shown(_ text: String) -> String {
            text.replacingOccurrences(of: #" in [0-9.]+ s, [0-9]+ assets/s"#, with: "", options: .regularExpression)
        }
        #expect(remote.status == 1 && local.status == 1, "\(remote.stderr)\n\(local.stderr)")
        #expect(shown(local.stdout) == """
            paperboy: 3 of 4 asset(s) delivered (3 now, 60.0 kB), 1 failed
            paperboy: issue whole is available
            hook: whole

            """, "\(local.stdout)")
        // The hook is the daemon's (DaemonHookTests): through it, the command's is not run.
        #expect(shown(remote.stdout) == shown(local.stdout).replacingOccurrences(of: "hook: whole\n", with: ""), "\(remote.stdout)")
        #expect(local.stderr.hasPrefix("failed: broken/missing.bin (\(server.url("/missing.bin").absoluteString)): "), "\(local.stderr)")
        #expect(remote.stderr == local.stderr)
    }

    @Test func withoutADaemonOrWithAStaleSocketTheCommandsWorkInProcess() async throws {
        let (config, runtime) = setUp()
        let first = workspace.write(randomData(10_000, seed: 1), to: "first.bin")
        var result = try await run(["add", first.path, "--issue", "solo", "-v", "--config", config.path], runtime: runtime)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.contains("no daemon socket at \(runtime.path)/paperboy/daemon.sock; working in-process"), "\(result.stderr)")

        // A socket file left by a daemon that died: nothing listens on it.
        let folder = runtime.appendingPathComponent("paperboy")
        mkdir(folder.path, 0o700)
        let socket = folder.appendingPathComponent("daemon.sock")
        try bindWithoutListening(socket, mode: 0o600)
        let second = workspace.write(randomData(10_000, seed: 2), to: "second.bin")
        result = try await run(["add", second.path, "--issue", "solo", "-v", "--config", config.path], runtime: runtime)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.contains("no daemon answers on \(socket.path) (a stale socket); working in-process"), "\(result.stderr)")
        result = try await run(["status", "--config", config.path], runtime: runtime)
        #expect(result.stdout.contains("first.bin  delivered") && result.stdout.contains("second.bin  delivered"), "\(result.stdout)")
    }

    /// Leaves a socket file at `url` with `mode` that nothing listens on.
    func bindWithoutListening(_ url: URL, mode: mode_t) throws {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            for (index, byte) in url.path.utf8.enumerated() { buffer[index] = byte }
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        close(fd)
        #expect(bound == 0)
        #expect(chmod(url.path, mode) == 0)
    }

    @Test func aSocketOfTheWrongModeOwnerOrFolderIsRefused() async throws {
        let (config, runtime) = setUp()
        let folder = runtime.appendingPathComponent("paperboy")
        mkdir(folder.path, 0o700)
        let socket = folder.appendingPathComponent("daemon.sock")

        try bindWithoutListening(socket, mode: 0o666)
        var result = try await run(["status", "--config", config.path], runtime: runtime)
        #expect(result.status == 1)
        #expect(result.stderr.contains("not using the daemon socket \(socket.path): its mode is 666"), "\(result.stderr)")

        #expect(chmod(socket.path, 0o600) == 0 && chmod(folder.path, 0o777) == 0)
        result = try await run(["issues", "--config", config.path], runtime: runtime)
        #expect(result.status == 1)
        #expect(result.stderr.contains("its folder \(folder.path) has mode 777: others could replace the socket"), "\(result.stderr)")
        #expect(chmod(folder.path, 0o700) == 0)

        if getuid() == 0 {
            #expect(chown(socket.path, 65534, 65534) == 0)
            result = try await run(["sync", "--config", config.path], runtime: runtime)
            #expect(result.status == 1)
            #expect(result.stderr.contains("it belongs to uid 65534, not to this user (0)"), "\(result.stderr)")
        }

        unlink(socket.path)
        _ = workspace.write("not a socket", to: "runtime/paperboy/daemon.sock")
        result = try await run(["read", "--none", "--config", config.path], runtime: runtime)
        #expect(result.status == 1)
        #expect(result.stderr.contains("it is not a socket"), "\(result.stderr)")
        // Nothing was opened in-process meanwhile.
        #expect(!FileManager.default.fileExists(atPath: workspace.path("lib/library.sqlite").path))
    }

    @Test func aDaemonWhoseSocketIsOutOfReachIsNamedInTheLockError() async throws {
        let (config, runtime) = setUp()
        let daemon = try await DaemonProcess(config: config, runtime: runtime, log: workspace.path("daemon.log"))
        defer { daemon.process.signal(SIGKILL) }
        let elsewhere = workspace.path("elsewhere")
        mkdir(elsewhere.path, 0o700)
        let result = try await run(["read", "--none", "--config", config.path], runtime: elsewhere)
        #expect(result.status == 1)
        #expect(result.stderr.contains("is open in another process; paperboy daemon (pid \(daemon.process.processIdentifier)) has it open and listens on \(daemon.socket.path)"),
                "\(result.stderr)")
        #expect(result.stderr.contains("this configuration's socket is \(elsewhere.path)/paperboy/daemon.sock"), "\(result.stderr)")
        _ = await daemon.stop()
        #expect(!FileManager.default.fileExists(atPath: workspace.path("lib/daemon.json").path))
    }

    @Test func readAndPurgeGoThroughTheDaemon() async throws {
        let (config, runtime) = setUp()
        let daemon = try await DaemonProcess(config: config, runtime: runtime, log: workspace.path("daemon.log"))
        defer { daemon.process.signal(SIGKILL) }
        for (name, date) in [("old", "2026-01-01"), ("new", "2026-02-01"), ("newest", "2026-03-01")] {
            let file = workspace.write(randomData(5_000, seed: 9), to: "\(name).bin")
            let result = try await run(["add", file.path, "--issue", name, "--date", date, "-q", "--config", config.path], runtime: runtime)
            #expect(result.status == 0, "\(result.stderr)")
        }
        var result = try await run(["read", "missing", "--config", config.path], runtime: runtime)
        #expect(result.status == 1)
        #expect(result.stderr.contains("no issue named 'missing'"), "\(result.stderr)")
        result = try await run(["read", "old", "-v", "--config", config.path], runtime: runtime)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.contains("using the daemon"))
        #expect(result.stdout.contains("paperboy: reading old (\(workspace.path("lib/Issues/old").path))"), "\(result.stdout)")
        result = try await run(["purge", "--keep", "1", "--config", config.path], runtime: runtime)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout == "removed new\nremoved newest\npaperboy: removed 2 issue(s); kept old (being read)\n")
        let client = try await Library.connect(socket: daemon.socket)
        #expect(try await client.issues().map(\.name) == ["old"])
        client.disconnect()
        let purged = try JSONDecoder().decode([String].self, from: Data(contentsOf: workspace.path("lib/purged-issues.json")))
        #expect(Set(purged) == ["new", "newest"])
        result = try await run(["issues", "--json", "--config", config.path], runtime: runtime)
        let shelf = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        #expect(shelf["currentlyReading"] as? String == "old")
        #expect(shelf["badgeCount"] as? Int == 0)
        _ = await daemon.stop()
    }

    /// A daemon serving a library with nothing configured (`sync_to_disk = false`), its runtime
    /// folder and its configuration file.
    func startBareDaemon() async throws -> (daemon: DaemonProcess, runtime: URL, config: URL) {
        let runtime = workspace.path("runtime")
        mkdir(runtime.path, 0o700)
        let config = workspace.write("[library]\npath = \"lib\"\nsync_to_disk = false\n", to: "daemon.toml")
        return (try await DaemonProcess(config: config, runtime: runtime, log: workspace.path("daemon.log")), runtime, config)
    }

    @Test func countsOfMoreIssuesThanAPageComeFromTheDaemonsStoreInPages() async throws {
        let (daemon, _, _) = try await startBareDaemon()
        defer { daemon.process.signal(SIGKILL) }
        let client = try await Library.connect(socket: daemon.socket)
        // 502 issues: the oldest and the newest hold an asset, on the second and the first page of 500.
        var holding: [String] = []
        for index in 0..<502 {
            let issue = try await client.addIssue(name: String(format: "i%03d", index), date: Date(timeIntervalSince1970: 1_790_000_000 + Double(index) * 86_400))
            guard index == 0 || index == 501 else { continue }
            let url = try #require(URL(string: "http://192.0.2.1/\(issue.name).bin"))
            _ = try await issue.addAsset(AssetRequest(url: url, destinationPath: "a.bin"))
            holding.append(issue.name)
        }
        var idle = AssetCounts()
        idle.idle = 1
        #expect(try await client.counts() == Dictionary(uniqueKeysWithValues: holding.map { ($0, idle) }))
        #expect(try await client.activity() == LibraryActivity())

        let frames = Frame.encode("HELLO", Data(#"{"protocols":[1]}"#.utf8))
            + Frame.encode("COUNTS", Data(#"{"id":2}"#.utf8)) + Frame.encode("COUNTS", Data(#"{"id":3,"offset":500}"#.utf8))
            + Frame.encode("COUNTS", Data(#"{"id":4,"offset":9999}"#.utf8)) + Frame.encode("ACTIVITY", Data(#"{"id":5}"#.utf8))
        let socket = daemon.socket
        let answers = try await offThePool { try DaemonHostileJSONTests.exchange(socket, frames, answers: 5) }
        #expect(answers.map(\.kind) == ["HELLO", "OK", "OK", "OK", "OK"], "\(answers.map { String(decoding: $0.payload, as: UTF8.self) })")
        let pages = answers.dropFirst().prefix(3).map { try? DaemonProtocol.decoder.decode(CountsReply.self, from: $0.payload) }
        // In the shelf's order, newest first: the last added on the first page.
        #expect(pages.map { $0?.issues.map(\.name) } == [[holding[1]], [holding[0]], []])
        #expect(pages.map { $0?.nextOffset } == [500, nil, nil])
        client.disconnect()
        _ = await daemon.stop()
    }

    @Test func anIssueLongerThanAPageIsListedWholeThroughTheDaemonAndBadLibraryRequestsGetErrors() async throws {
        let (daemon, runtime, config) = try await startBareDaemon()
        defer { daemon.process.signal(SIGKILL) }
        let client = try await Library.connect(socket: daemon.socket)
        let served = try #require(client.daemon)
        let issue = try await client.addIssue(name: "long", date: Date(timeIntervalSince1970: 1_790_000_000))
        let count = 1_201
        for index in 0..<count {
            // Cellular only, on a wired machine: once asked for, each waits for a network (over
            // HTTP to a documentation address, TEST-NET-1: local files and loopback need none),
            // never connecting.
            let url = try #require(URL(string: String(format: "http://192.0.2.1/a%04d.bin", index)))
            _ = try await issue.addAsset(AssetRequest(url: url, destinationPath: String(format: "a%04d.bin", index),
                                                      network: NetworkPolicyOverride(allowedKinds: [.cellular])))
        }
        var sizes: [Int] = []
        var after: String?
        repeat {
            let page = try await served.assetsPage(issue: "long", after: after)
            sizes.append(page.assets.count)
            after = page.next
        } while after != nil
        #expect(sizes == [500, 500, 201])
        // The same assets' states alone (`STATES`, what a settle reads), in the same order, in
        // pages of 1,000; a cursor that is none is refused, as for `ASSETS`.
        var states: [[String]] = []
        after = nil
        repeat {
            let page = try await served.statesPage(issue: "long", after: after)
            states.append(page.states.map(\.asset))
            #expect(page.states.allSatisfy { $0.state.state == .idle }, "\(page.states.prefix(3))")
            after = page.next
        } while after != nil
        #expect(states.map(\.count) == [1_000, 201])
        #expect(states.flatMap { $0 } == (try await issue.assets()).map(\.identifier))
        await #expect(throws: LibraryError.self) { try await served.statesPage(issue: "long", after: "not a cursor") }
        await #expect(throws: LibraryError.self) { try await served.statesPage(issue: "missing", after: nil) }

        let result = try await run(["status", "--json", "--config", config.path], runtime: runtime)
        #expect(result.status == 0, "\(result.stderr)")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        let assets = try #require((json["issues"] as? [[String: Any]])?.first?["assets"] as? [[String: Any]])
        #expect(assets.compactMap { $0["path"] as? String } == (0..<count).map { String(format: "a%04d.bin", $0) })

        // All of them asked for and waiting: more active assets than one frame holds, listed whole.
        for asset in try await issue.assets() { try await asset.download() }
        let waiting = try await client.downloadingAssets()
        #expect(waiting.count == count)
        #expect(waiting.allSatisfy { $0.state == .waiting(.network) }, "\(Set(waiting.map { "\($0.state)" }))")
        // `STATUS` of the whole library with its assets outgrows a frame: an error naming the
        // pages to read instead, and the connection goes on (it was closed before).
        // Counted by the daemon from its store (`COUNTS`, `ACTIVITY`), not by listing every asset.
        var expected = AssetCounts()
        expected.waitingForNetwork = count
        #expect(try await client.counts() == ["long": expected])
        let activity = try await client.activity()
        #expect(activity.waitingForNetwork == count && activity.downloading == 0, "\(activity)")
        let frames = Frame.encode("HELLO", Data(#"{"protocols":[1]}"#.utf8))
            + Frame.encode("STATUS", Data(#"{"id":2}"#.utf8)) + Frame.encode("STATUS", Data(#"{"id":3,"assets":false}"#.utf8))
        let socket = daemon.socket
        let answers = try await offThePool { try DaemonHostileJSONTests.exchange(socket, frames, answers: 3) }
        #expect(answers.map(\.kind) == ["HELLO", "ERROR", "OK"], "\(answers.map { String(decoding: $0.payload, as: UTF8.self) })")
        let refusal = String(decoding: answers.dropFirst().first?.payload ?? Data(), as: UTF8.self)
        #expect(refusal.contains("frame-too-large") && refusal.contains("SHELF and ASSETS") && refusal.contains(#""id":2"#), "\(refusal)")

        await #expect(throws: LibraryError.self) { try await served.assetsPage(issue: "missing", after: nil) }
        do {
            _ = try await served.assetsPage(issue: "long", after: "not a cursor")
            Issue.record("a cursor that is not one was accepted")
        } catch {
            #expect(error.code.rawValue == "bad-request" && error.message.contains("'after'"), "\(error)")
        }
        do {
            try await client.purge(keep: -1)
            Issue.record("a negative keep was accepted")
        } catch {
            #expect(error.code.rawValue == "bad-request", "\(error)")
        }
        do {
            try await served.setCurrentlyReadingIssue(named: "missing")
            Issue.record("an unknown issue became the one being read")
        } catch {
            #expect(error.code == .issueNotFound, "\(error)")
        }
        #expect(try await client.issues().map(\.name) == ["long"])
        client.disconnect()
        _ = await daemon.stop()
    }
}
