import Foundation
import Logging
import Paperboy
import PaperboyConfig
import PaperboyTesting
import Synchronization
import Testing
@testable import paperboy

/// The daemon's feed timer in-process, on a ``TestClock``: each refresh is due at an exact time
/// (the daemon's process tests, DaemonFeedTests, cover the file it keeps and `NOTIFY`).
@Suite("The daemon's feed timer on a test clock", .timeLimit(.minutes(2)))
struct FeedDutyTests {
    let workspace = Workspace()
    let clock = TestClock()

    /// A catalog of one issue, a configuration with the feed `gazette` refreshed every 6 h, and
    /// the library it names, open.
    func setUp() throws -> (PaperboyConfiguration, Library) {
        _ = workspace.write(Data("issue".utf8), to: "publisher/content/a.pdf")
        _ = workspace.write("""
            {"issues": [{"name": "2026-11-21", "date": "2026-11-21", "assets": [{"url": "content/a.pdf", "path": "a.pdf"}]}]}
            """, to: "publisher/catalog.json")
        let file = workspace.write("""
            [library]
            path = "lib"
            sync_to_disk = false
            [[feeds]]
            name = "gazette"
            url = "publisher/catalog.json"
            refresh = "6h"
            """, to: "paperboy.toml")
        let config = try PaperboyConfiguration.load(contentsOf: file)
        return (config, try DaemonRoute.openInProcess(config, configuration: config.libraryConfiguration(),
                                                      transports: Transports.registry(for: config)))
    }

    /// The next refresh `feed-schedule.json` records (to the second, as the file keeps it).
    func recordedNext() throws -> Date? {
        let data = try Data(contentsOf: workspace.path("lib/feed-schedule.json"))
        let json = try JSONSerialization.jsonObject(with: data) as? [String: Any]
        let text = ((json?["feeds"] as? [String: Any])?["gazette"] as? [String: Any])?["next_refresh"] as? String
        return text.flatMap { ISO8601DateFormatter().date(from: $0) }
    }

    @Test func aNewFeedIsRefreshedWithinItsFirstSpreadThenEveryRefreshLessItsJitter() async throws {
        let (config, library) = try setUp()
        // The jitter's random number is 0.5: the first refresh 30 s in (half the 60 s spread),
        // the next ones 6 h less 5 % (20,520 s) apart.
        let duty = FeedDuty(library: library, config: config, logger: Logger(label: "test"), clock: clock, random: { 0.5 })
        let origin = clock.now
        await duty.begin()
        try await clock.waitForSleepers(1)
        #expect(clock.pendingSleeps == [.seconds(30)])
        #expect(try recordedNext() == origin.addingTimeInterval(30))
        clock.advance(by: .seconds(29))
        #expect(try await library.issue(named: "2026-11-21") == nil, "refreshed before it was due")

        clock.advance(by: .seconds(1))
        // Refreshed: its issue added and started; the timer sleeps an hour, its longest, and
        // wakes up to look at the wall clock until the next refresh is due.
        try await eventually("the refresh to arm the timer again", seen: "\(clock.pendingSleeps)") {
            clock.pendingSleeps == [.seconds(3600)]
        }
        let issue = try #require(try await library.issue(named: "2026-11-21"))
        let asset = try #require(try await issue.assets().first)
        #expect(try await asset.waitUntilFinished() == .delivered, "the refresh did not start the asset it added")
        let second = origin.addingTimeInterval(30 + 20_520)
        #expect(try recordedNext() == second)

        // Five wake-ups of an hour find nothing due; the sixth sleep ends at the refresh.
        for hour in 1...5 {
            clock.advance(by: .seconds(3600))
            try await eventually("wake-up \(hour) to sleep again", seen: "\(clock.pendingSleeps)") { clock.sleeperCount == 1 }
            #expect(try recordedNext() == second, "wake-up \(hour) refreshed early")
        }
        #expect(clock.pendingSleeps.count == 1 && abs(Self.seconds(clock.pendingSleeps[0]) - 2_520) < 0.001, "\(clock.pendingSleeps)")
        clock.advanceToNextDeadline()
        try await eventually("the second refresh to record the third", seen: "\((try? recordedNext()).flatMap { $0 }.map { "\($0)" } ?? "none")") {
            try recordedNext() == second.addingTimeInterval(20_520)
        }
        // Nothing new in the catalog: the same asset, delivered, is not added again.
        #expect(try await issue.assets().map(\.identifier) == [asset.identifier])
        await duty.stop()
        await library.close()
    }

    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}
