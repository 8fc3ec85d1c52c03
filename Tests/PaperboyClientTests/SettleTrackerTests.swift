import Foundation
import Paperboy
@testable import PaperboyClient
import PaperboyWire
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

/// The client's mirror of the daemon: what events and answers leave in it.
@Suite("The daemon mirror")
struct DaemonMirrorTests {
    static func asset(_ state: AssetState, bytes: Int64 = 0) -> WireAsset {
        WireAsset(id: "a", issue: "i", request: AssetRequest(url: URL(string: "https://example.com/a")!), userInfo: nil,
                  state: WireState(state), totalBytesWritten: bytes, expectedTotalBytes: nil, attempts: 0)
    }

    /// An answer to a request sent before an event about its asset keeps the event's state and
    /// bytes; one sent after it is taken whole.
    @Test func anAnswerOlderThanAnEventKeepsWhatTheEventSaid() {
        var mirror = DaemonMirror()
        mirror.record(Self.asset(.waiting(.queued)), since: nil)
        let sent = mirror.eventCount
        mirror.apply(.progress(asset: "a", bytesWritten: 10, totalBytesWritten: 10, expectedTotalBytes: 10))
        mirror.apply(.state(asset: "a", issue: "i", state: WireState(.delivered)))
        mirror.record(Self.asset(.downloading, bytes: 4), since: sent)
        #expect(mirror.assets["a"]?.status?.state == .delivered)
        #expect(mirror.assets["a"]?.status?.totalBytesWritten == 10)
        mirror.record(Self.asset(.idle), since: mirror.eventCount)
        #expect(mirror.assets["a"]?.status?.state == .idle)
    }

    /// Events about assets the mirror does not know leave nothing behind, however many a daemon
    /// sends.
    @Test func eventsAboutUnknownAssetsAreNotKept() {
        var mirror = DaemonMirror()
        for index in 0..<1_000 {
            mirror.apply(.progress(asset: "x\(index)", bytesWritten: 1, totalBytesWritten: 1, expectedTotalBytes: nil))
        }
        #expect(mirror.assets.isEmpty)
        #expect(mirror.eventCount == 1_000)
    }

    /// A listing whose sizes add up past `Int64.max` (a broken daemon) is counted, its totals
    /// held at `Int64.max`: the sums trapped the client before (the `reply` fuzz target's seed
    /// `ok-assets-bytes-int64-max`).
    @Test func sizesAddingUpPastInt64MaxAreCountedWithoutATrap() throws {
        var mirror = DaemonMirror()
        mirror.record(WireIssue(name: "i", date: Date(timeIntervalSince1970: 0), status: "none", isNew: false, contentPath: "/i"))
        let request = AssetRequest(url: URL(string: "https://example.com/a")!)
        let listing = ["a", "b", "c"].map {
            WireAsset(id: $0, issue: "i", request: request, userInfo: nil, state: WireState(.downloading),
                      totalBytesWritten: .max, expectedTotalBytes: .max, attempts: 0)
        }
        mirror.recordListing(listing, ofIssue: "i")
        let counts = mirror.counts(ofIssue: "i")
        #expect(counts.downloading == 3)
        #expect(counts.bytesWritten == .max && counts.expectedBytes == .max)
        var activity = LibraryActivity()
        for asset in listing { activity.count(try #require(mirror.assets[asset.id]?.status)) }
        #expect(activity.downloading == 3 && activity.bytesWritten == .max)
    }
}
