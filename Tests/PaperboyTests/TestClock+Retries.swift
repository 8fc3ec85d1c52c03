import Foundation
import Testing
@testable import Paperboy
import PaperboyTesting

extension TestClock {
    /// The retry `asset` waits for, once it shows one: the attempt number shown and the exact
    /// time left until its date.
    func retryShown(by asset: AssetDownload) async throws -> (attempt: Int, left: Duration) {
        var shown: (Int, Duration)?
        try await eventually("a retry shown", seen: "\(asset.state)") {
            guard case .waiting(.retry(let until, let attempt)) = asset.state else { return false }
            shown = (attempt, Scheduler.delay(until: until, from: now))
            return true
        }
        return try #require(shown)
    }

    /// Runs the retry timed `left` from now once its timer sleeps: moves to 1 ms before its
    /// date (the timer still sleeps, attempt `jobs + 1` has not begun), then to its date, and
    /// returns once the attempt has begun.
    func runRetry(after left: Duration, of transport: InMemoryTransport, jobs: Int) async throws {
        try await waitForSleep(of: left)
        advance(by: left - .milliseconds(1))
        #expect(pendingSleeps.contains(.milliseconds(1)), "the retry's timer woke before its date: \(pendingSleeps)")
        #expect(transport.jobs.count == jobs, "a retry started 1 ms before its date")
        advance(by: .milliseconds(1))
        try await eventually("attempt \(jobs + 1) at its date", seen: "\(transport.jobs.count) attempts") { transport.jobs.count == jobs + 1 }
    }
}
