#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Paperboy
import PaperboyWire
import PaperboyClient
import PaperboyDaemon
import PaperboyFraming
import PaperboyTestServers
import PaperboyTesting
import Testing

/// The daemon's feeds: refreshed on their `refresh` schedule (kept in `feed-schedule.json`
/// across restarts) and on `NOTIFY` (`paperboy notify` through the daemon).
@Suite("paperboy daemon: feed schedules and notify", .serialized, .timeLimit(.minutes(3)))
struct DaemonFeedTests {
    let workspace = Workspace()

    /// A catalog listing one issue per name, each a small PDF with its checksum.
    func publish(_ names: [String]) {
        var list: [String] = []
        for name in names {
            let data = Data("issue \(name)".utf8)
            _ = workspace.write(data, to: "publisher/content/\(name).pdf")
            list.append("""
                {"name": "\(name)", "date": "\(name)", "assets": [{"url": "content/\(name).pdf", "sha256": "\(sha256Hex(data))", "path": "magazine.pdf"}]}
                """)
        }
        _ = workspace.write("{\"issues\": [\(list.joined(separator: ", "))]}", to: "publisher/catalog.json")
    }

    /// A configuration with the feed `gazette` refreshed every 6 h, a private library folder
    /// and runtime folder; `schedule` is written as the library's `feed-schedule.json`.
    func setUp(schedule: String?) -> (config: URL, runtime: URL) {
        let runtime = workspace.path("runtime")
        mkdir(runtime.path, 0o700)
        mkdir(workspace.path("lib").path, 0o700)
        if let schedule { _ = workspace.write(schedule, to: "lib/feed-schedule.json") }
        let config = workspace.write("""
            [library]
            path = "lib"

            [[feeds]]
            name = "gazette"
            url = "publisher/catalog.json"
            refresh = "6h"
            """, to: "paperboy.toml")
        return (config, runtime)
    }

    /// The next refresh `feed-schedule.json` records for `gazette`.
    func nextRefresh() throws -> Date? {
        let data = try Data(contentsOf: workspace.path("lib/feed-schedule.json"))
        let json = try JSONSerialization.jsonObject(with: data) as? [String: Any]
        let text = ((json?["feeds"] as? [String: Any])?["gazette"] as? [String: Any])?["next_refresh"] as? String
        return text.flatMap { ISO8601DateFormatter().date(from: $0) }
    }

    func log(_ daemon: DaemonProcess) -> String { (try? String(contentsOf: daemon.log, encoding: .utf8)) ?? "" }

    /// When the feed timer was armed to wake, each time the daemons writing `daemon.log` armed it.
    func timerWakes(_ daemon: DaemonProcess) -> [Date] {
        log(daemon).matches(of: /feeds: the timer wakes at (\S+)/).compactMap { ISO8601DateFormatter().date(from: String($0.1)) }
    }

    @Test func aDueFeedIsRefreshedTheScheduleSurvivesARestartAndNotifyAddsTheNewIssue() async throws {
        publish(["2026-11-21"])
        let (config, runtime) = setUp(schedule: #"{"version": 1, "feeds": {"gazette": {"next_refresh": "2020-01-01T00:00:00Z"}}}"#)
        var daemon = try await DaemonProcess(config: config, runtime: runtime, log: workspace.path("daemon.log"))
        defer { daemon.process.signal(SIGKILL) }
        let client = try await Library.connect(socket: daemon.socket)
        // Due since 2020: refreshed at start (the timer armed for now), its issue added and
        // downloaded, then the timer armed again once the next refresh was recorded.
        try await eventually("the issue to be available") { try await client.issue(named: "2026-11-21")?.status == .available }
        try await eventually("the refresh to arm the timer again", seen: log(daemon)) { timerWakes(daemon).count == 2 }
        let next = try #require(try nextRefresh())
        let sixHours: TimeInterval = 6 * 3600
        #expect(next > Date() + sixHours * 0.9 - 60 && next <= Date() + sixHours, "\(next)")
        client.disconnect()
        _ = await daemon.stop()
        #expect(daemon.process.terminationReason == .exit && daemon.process.terminationStatus == 0, "\(log(daemon))")

        // A new issue in the catalog; the restarted daemon keeps the schedule: nothing is due,
        // its timer wakes in an hour (the longest it sleeps), not now.
        publish(["2026-11-21", "2026-11-28"])
        daemon = try await DaemonProcess(config: config, runtime: runtime, log: workspace.path("daemon.log"))
        try await eventually("the restarted daemon to arm its feed timer", seen: log(daemon)) { timerWakes(daemon).count == 3 }
        #expect(try nextRefresh() == next)
        let wake = try #require(timerWakes(daemon).last)
        #expect(wake > Date() + 3600 - 600, "the restarted daemon's timer wakes at \(wake)")
        let again = try await Library.connect(socket: daemon.socket)
        #expect(try await again.issue(named: "2026-11-28") == nil)
        let shown = ISO8601DateFormatter().string(from: next)
        #expect(log(daemon).components(separatedBy: "feed 'gazette': next refresh at \(shown)").count == 3, "\(log(daemon))")
        #expect(log(daemon).components(separatedBy: "refreshing 1 feed(s) on schedule").count == 2, "\(log(daemon))")

        // `paperboy notify` goes through the daemon, which adds and downloads the new issue; the
        // command follows it as an in-process notify does, and returns once it is settled. (The
        // daemon may deliver the two small files before the command plans: then they are
        // already delivered, not made available by this run.)
        let environment = ["XDG_RUNTIME_DIR": runtime.path]
        let notify = try await CLI.run(["notify", "-v", "--config", config.path], environment: environment)
        #expect(notify.status == 0, "\(notify.stdout) \(notify.stderr)")
        #expect(notify.stderr.contains("using the daemon on \(daemon.socket.path)"), "\(notify.stderr)")
        #expect(notify.stdout.hasPrefix("paperboy: content available; refreshing 1 feed(s)\n"), "\(notify.stdout)")
        #expect(notify.stdout.hasSuffix("paperboy: issue 2026-11-28 is available\n")
                    || notify.stdout.hasSuffix("paperboy: nothing to do; 2 asset(s) already delivered\n"), "\(notify.stdout)")
        #expect(try await again.issue(named: "2026-11-28")?.status() == .available)
        #expect(try Data(contentsOf: workspace.path("lib/Issues/2026-11-28/magazine.pdf")) == Data("issue 2026-11-28".utf8))
        // The refresh moved the feed's next time; a second trigger within 24 h is throttled.
        let moved = try #require(try nextRefresh())
        #expect(moved != next && moved > Date() + sixHours * 0.9 - 60, "\(moved)")
        let throttled = try await CLI.run(["notify", "--config", config.path], environment: environment)
        #expect(throttled.status == 0 && throttled.stdout.contains("paperboy: throttled; the next refresh is allowed at"), "\(throttled.stdout)")
        again.disconnect()
        _ = await daemon.stop()
    }

    @Test func notifyNamingAnUnknownFeedOrWithoutContentAvailableChangesNothing() async throws {
        publish(["2026-11-21"])
        let (config, runtime) = setUp(schedule: #"{"version": 1, "feeds": {"gazette": {"next_refresh": "2999-01-01T00:00:00Z"}}}"#)
        let daemon = try await DaemonProcess(config: config, runtime: runtime, log: workspace.path("daemon.log"))
        defer { daemon.process.signal(SIGKILL) }
        try await eventually("the daemon to schedule its feed", seen: log(daemon)) { log(daemon).contains("next refresh at") }
        let probe = DaemonTests()
        let hello = Frame.encode("HELLO", Data(#"{"protocols":[1]}"#.utf8))
        let socket = daemon.socket
        // Blocking reads, each answer waited for: on a thread of their own, not the cooperative pool.
        let unknown = try await offThePool { try DaemonHostileJSONTests.exchange(socket, hello + Frame.encode("NOTIFY", Data(#"{"id":2,"feed":"\u001b[31mnope"}"#.utf8)), answers: 2) }
        #expect(unknown.map(\.kind) == ["HELLO", "ERROR"])
        #expect(probe.errorCode(unknown.last) == "feed-not-found")
        let ignored = try await offThePool { try DaemonHostileJSONTests.exchange(socket, hello + Frame.encode("NOTIFY", Data(#"{"id":3,"payload":{"aps":{"alert":"hi"}}}"#.utf8)), answers: 2) }
        #expect(ignored.last.map { String(decoding: $0.payload, as: UTF8.self) }?.contains(#""result":"ignored""#) == true)
        let wrong = try await offThePool { try DaemonHostileJSONTests.exchange(socket, hello + Frame.encode("NOTIFY", Data(#"{"id":4,"feed":7}"#.utf8)), answers: 2) }
        #expect(probe.errorCode(wrong.last) == "bad-request")
        // A schedule far in the future was kept (2999 is more than 6 h away: brought forward).
        let next = try #require(try nextRefresh())
        #expect(next <= Date() + 6 * 3600)
        let client = try await Library.connect(socket: daemon.socket)
        let alert = try JSONDecoder().decode(JSONValue.self, from: Data(#"{"aps": {"alert": "hi"}}"#.utf8))
        #expect(try await client.contentAvailable(payload: alert) == .ignored)
        let served = try #require(client.daemon)
        let error = await #expect(throws: LibraryError.self) { try await served.notify(payload: nil, feed: "nope") }
        #expect(error?.code.rawValue == "feed-not-found" && error?.message.contains("no feed named 'nope'") == true)
        #expect(try await client.issues().isEmpty)
        client.disconnect()
        _ = await daemon.stop()
    }

    @Test func aCorruptScheduleIsSetAsideLoggedAndRecomputed() async throws {
        publish(["2026-11-21"])
        let garbage = "{\"version\": 1, \"feeds\": {\"gazette\": \u{0}\u{1}garbage"
        let (config, runtime) = setUp(schedule: garbage)
        let started = Date()
        let daemon = try await DaemonProcess(config: config, runtime: runtime, log: workspace.path("daemon.log"))
        defer { daemon.process.signal(SIGKILL) }
        // The schedule is read once the socket listens, before systemd hears READY=1.
        try await eventually("the daemon to schedule its feed", seen: log(daemon)) { log(daemon).contains("next refresh at") }
        #expect(daemon.process.isRunning)
        #expect(log(daemon).contains("feed-schedule.json: not a feed schedule"), "\(log(daemon))")
        #expect(log(daemon).contains("set aside as feed-schedule.json.corrupt, feed schedule recomputed"))
        #expect(try String(contentsOf: workspace.path("lib/feed-schedule.json.corrupt"), encoding: .utf8) == garbage)
        // Recomputed like a new feed: due within a minute, not all at the same instant.
        let next = try #require(try nextRefresh())
        #expect(next >= started.addingTimeInterval(-1) && next <= Date() + 61, "\(next)")
        var info = stat()
        #expect(stat(workspace.path("lib/feed-schedule.json").path, &info) == 0 && info.st_mode & 0o777 == 0o600)
        _ = await daemon.stop()
    }

    @Test func notifyRefusesASocketOthersCouldOpenOrThatIsNotASocket() async throws {
        publish(["2026-11-21"])
        let (config, runtime) = setUp(schedule: nil)
        let socket = runtime.appendingPathComponent("paperboy/daemon.sock")
        let fd = try DaemonSocket.listen(at: socket)
        defer { close(fd) }
        #expect(chmod(socket.path, 0o666) == 0)
        let environment = ["XDG_RUNTIME_DIR": runtime.path]
        let open = try await CLI.run(["notify", "--config", config.path], environment: environment)
        #expect(open.status == 1, "\(open.stdout) \(open.stderr)")
        #expect(open.stderr.contains("not using the daemon socket \(socket.path): its mode is 666"), "\(open.stderr)")
        unlink(socket.path)
        _ = workspace.write("not a socket", to: "runtime/paperboy/daemon.sock")
        let file = try await CLI.run(["notify", "--config", config.path], environment: environment)
        #expect(file.status == 1 && file.stderr.contains("it is not a socket"), "\(file.stderr)")
        // Nothing was refreshed in-process either.
        #expect(!FileManager.default.fileExists(atPath: workspace.path("lib/Issues/2026-11-21").path))
    }
}
