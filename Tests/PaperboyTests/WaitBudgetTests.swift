import Foundation
import PaperboyTesting
import Synchronization
import Testing

/// A test's guards (`eventually`, `TestClock.waitForSleepers`, `RecordingDelegate.waitForEnd`, the
/// conformance checks' transfer limits) are `WaitBudget`s: time in which the waiter itself was
/// held up does not count, so a starved process does not fail a correct test; a hang still does.
/// The held-up waiter is played by a condition that takes longer than the whole guard (an async
/// sleep standing for a machine that did not schedule the process; nothing waits for it).
@Suite("Wait budgets", .timeLimit(.minutes(2)))
struct WaitBudgetTests {
    @Test func aTurnHeldUpByTheMachineCountsAtMostTenTurns() async throws {
        var budget = WaitBudget(.milliseconds(100))
        try await Task.sleep(for: .milliseconds(400))
        try await budget.pause()
        #expect(budget.spent <= .milliseconds(50))
        #expect(!budget.isSpent)
        #expect(budget.wallTime >= .milliseconds(400))
    }

    @Test func eventuallyOutlastsAWaiterHeldUpLongerThanItsTimeout() async throws {
        let calls = Counter()
        // Each look takes 300 ms of wall time, more than the whole 200 ms guard; on the wall clock
        // the guard expired after the first.
        try await eventually("the third look", timeout: .milliseconds(200)) {
            try await Task.sleep(for: .milliseconds(300))
            return calls.next() == 3
        }
        #expect(calls.value == 3)
    }

    @Test func aHangStillTimesOutNamingWhatWasAwaited() async throws {
        let start = ContinuousClock.now
        do {
            try await eventually("something that never comes", timeout: .milliseconds(100), seen: "nothing") { false }
            Issue.record("expected TimedOut")
        } catch let timedOut as TimedOut {
            #expect(timedOut.description.hasPrefix("timed out after 0.1 s"))
            #expect(timedOut.description.hasSuffix("waiting for something that never comes; saw nothing"))
        }
        #expect(ContinuousClock.now - start >= .milliseconds(100))
    }

    @Test func aGuardTimerEndsOnceItsBudgetIsSpent() async throws {
        let start = ContinuousClock.now
        try await WaitBudget.spend(.milliseconds(150))
        #expect(ContinuousClock.now - start >= .milliseconds(150))
    }
}

private final class Counter: Sendable {
    private let count = Mutex(0)
    func next() -> Int { count.withLock { $0 += 1; return $0 } }
    var value: Int { count.withLock { $0 } }
}
