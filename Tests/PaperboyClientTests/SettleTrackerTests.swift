import Paperboy
@testable import PaperboyClient
import PaperboyTesting
import Testing

/// How a sync through a daemon knows its issues are settled: events, checked by sweeps of the
/// issues' pages.
@Suite("Settling through a daemon")
struct SettleTrackerTests {
    /// An event told while a sweep reads its pages is kept over what the sweep read: the page
    /// holding its asset may have been read before it. Taking the page instead made every sync
    /// of many small files through a daemon wait 2 s of quiet and sweep again at its end.
    @Test func anEventToldDuringASweepIsKeptOverThePageReadBeforeIt() {
        let tracker = SettleTracker(issues: ["i"], includingNetworkWaits: false, retryWaitLimit: nil, clock: TestClock())
        tracker.beginSweep()
        tracker.update("a", ofIssue: "i", .delivered)
        tracker.endSweep(["a": .downloading, "b": .delivered])
        #expect(tracker.isSettled)

        // With no event meanwhile, a sweep is taken as it read.
        tracker.beginSweep()
        tracker.endSweep(["a": .downloading, "b": .delivered])
        #expect(!tracker.isSettled)
        tracker.update("a", ofIssue: "i", .delivered)
        #expect(tracker.isSettled)
        // Another issue's events are not followed.
        tracker.update("c", ofIssue: "other", .downloading)
        #expect(tracker.isSettled)
    }
}
