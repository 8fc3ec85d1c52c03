import Foundation
@testable import PaperboyHTTP
import Testing

/// The rule that tells a stalled HTTP request, on instants made up by the test: what the curl
/// thread saw, and when each `curl_multi_perform` started and each look happened.
@Suite("HTTP idle watch", .timeLimit(.minutes(1)))
struct IdleWatchTests {
    /// One look of the curl thread: the request's activity count and pause, the start of the
    /// perform before it and the look itself, in milliseconds after the watch started.
    struct Look {
        var activity: UInt64 = 0
        var isPaused = false
        var performStart: Int
        var now: Int
    }

    /// Whether each look found the request stalled, for a watch with a 1 s timeout.
    func stalls(_ looks: [Look]) -> [Bool] {
        let origin = ContinuousClock.now
        var watch = IdleWatch(timeout: .seconds(1), activity: 0, at: origin)
        return looks.map {
            watch.isStalled(activity: $0.activity, isPaused: $0.isPaused,
                            performStart: origin + .milliseconds($0.performStart), now: origin + .milliseconds($0.now))
        }
    }

    @Test func aSourceSilentForTheTimeoutIsStalled() {
        #expect(stalls([Look(performStart: 999, now: 1000), Look(performStart: 1000, now: 1001)]) == [false, true])
    }

    @Test func bytesOrAPauseStartTheSilenceAgain() {
        let looks = [
            // Bytes came in the performs before this look: silent since the look.
            Look(activity: 3, performStart: 900, now: 1500),
            Look(activity: 3, performStart: 2499, now: 2500),
            // Paused by back-pressure: that time does not count.
            Look(activity: 3, isPaused: true, performStart: 5000, now: 5000),
            Look(activity: 3, performStart: 5999, now: 6000),
            Look(activity: 3, performStart: 6000, now: 6000),
        ]
        #expect(stalls(looks) == [false, false, false, false, true])
    }

    /// Bytes a source sends while the curl thread is away (another transfer's sink writing to a
    /// slow disk or held by a test, the thread not scheduled on a loaded machine) wait in the
    /// socket for the next perform: only the silence before a perform started counts.
    @Test func timeTheCurlThreadSpendsElsewhereIsNotSilence() {
        let looks = [
            // A perform started 0.2 s after the watch; another transfer's callback then held the thread 5 s.
            Look(performStart: 200, now: 5200),
            // The next perform read what came meanwhile.
            Look(activity: 1, performStart: 5201, now: 5210),
            // Silent from that look on.
            Look(activity: 1, performStart: 6210, now: 6300),
        ]
        #expect(stalls(looks) == [false, false, true])
    }
}
