import Foundation
import Paperboy
import PaperboyTestServers
import PaperboyTesting
import Synchronization
import Testing

/// ``Library/waitUntilIdle(includingNetworkWaits:retryWaitLimit:)``: a one-shot caller stops
/// waiting for a retry due later than its limit; without one (the daemon, an app) every retry is
/// waited for (issue 26, case 8).
@Suite("Waiting for a library with a retry wait limit", .timeLimit(.minutes(2)))
struct RetryWaitLimitTests {
    let folder = TempFolder(prefix: "retry-wait")

    @Test func aRetryDueLaterThanTheLimitEndsTheWaitAndStillHappensForThoseWhoWait() async throws {
        let clock = TestClock()
        let transport = InMemoryTransport()
        let unavailable = TransportError(.rateLimited, "503 Service Unavailable", isRetryable: true, retryAfter: .seconds(3600))
        let url = transport.serve(Data(count: 10), at: "late", script: [.fail(unavailable)])
        let library = try await offThePool { [folder] in
            try Library.open(at: folder.url, transports: TransportRegistry([transport]), configuration: .forTests(attempts: 5, clock: clock))
        }
        let issue = try await library.addIssue(name: "i", date: Date())
        let asset = try await issue.addAsset(AssetRequest(url: url, destinationPath: "late.bin"))
        let started = clock.now
        try await asset.download()

        let limited = Mutex(false)
        let wait = Task {
            await library.waitUntilIdle(retryWaitLimit: RetryWaitLimit(maxWait: .seconds(60)))
            limited.withLock { $0 = true }
        }
        try await eventually("the wait with a limit to end while the retry waits", seen: "\(asset.state)") { limited.withLock { $0 } }
        await wait.value
        guard case .waiting(.retry(let until, let attempt)) = asset.state else {
            Issue.record("expected a retry, got \(asset.state)")
            await library.close()
            return
        }
        #expect(attempt == 2)
        #expect(abs(until.timeIntervalSince(started) - 3600) < 1, "\(until)")
        #expect(RetryWaitLimit(maxWait: .seconds(60)).retryEndingWait(asset.state, now: clock.now) == until)
        #expect(RetryWaitLimit(maxWait: .seconds(7200)).retryEndingWait(asset.state, now: clock.now) == nil)

        // Without a limit the wait goes on until the retry, an hour later on the clock.
        let idle = Mutex(false)
        let waited = Task {
            await library.waitUntilIdle()
            idle.withLock { $0 = true }
        }
        try await clock.waitForSleepers(1)
        #expect(!idle.withLock { $0 } && asset.state != .delivered)
        // Moved an hour at a time until the retry's timer, whenever it starts sleeping, is due.
        try await eventually("the retry an hour later on the clock", seen: "\(asset.state)") {
            clock.advance(by: .seconds(3601))
            return idle.withLock { $0 }
        }
        await waited.value
        #expect(asset.state == .delivered)
        await library.close()
    }
}
