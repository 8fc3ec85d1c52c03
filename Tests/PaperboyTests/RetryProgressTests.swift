import Foundation
import Testing
@testable import Paperboy
import PaperboyTesting

/// Retries counted by progress, and the overall no-progress timeout (issue 16, case 1), on a
/// test clock: each retry's date and attempt number, and the moment an asset gives up, exactly.
@Suite("Retries by progress", .timeLimit(.minutes(2)))
struct RetryProgressTests {
    let folder = TempFolder()
    let clock = TestClock()

    /// A library on the test clock, with full delays (no jitter): each retry's date is known.
    func open(_ transport: InMemoryTransport, retry: RetryPolicy) throws -> Library {
        var configuration = Library.Configuration.forTests(clock: clock)
        configuration.retry = retry
        configuration.retryJitter = { _ in 1 }
        return try Library.open(at: folder.file("library"), transports: TransportRegistry([transport]), configuration: configuration)
    }

    @Test func eachAttemptWithProgressRestartsTheCount() async throws {
        let transport = InMemoryTransport(chunkSize: 1_000)
        let data = randomData(10_000, seed: 3)
        let lost = TransportError(.connectionLost, "connection reset")
        // Nine attempts that each bring 1,000 bytes, two attempts allowed without progress.
        let url = transport.serve(data, at: "f", script: Array(repeating: .failAfter(1_000, lost), count: 9))
        let retry = RetryPolicy(maxAttempts: 2, baseDelay: .milliseconds(5), maxDelay: .milliseconds(10))
        let library = try open(transport, retry: retry)
        let asset = try await library.addIssue(name: "i", date: Date()).addAsset(AssetRequest(url: url))
        let delegate = RecordingDelegate()
        try await asset.download(delegate: delegate)
        for attempt in 1...9 {
            try await eventually("attempt \(attempt)") { transport.jobs.count == attempt }
            // Each attempt made progress: the first delay (5 ms) again, and attempt 1 of 2 again.
            let shown = try await clock.retryShown(by: asset)
            #expect(shown.attempt == 1 && shown.left == .milliseconds(5), "after attempt \(attempt): \(shown)")
            try await clock.runRetry(after: shown.left, of: transport, jobs: attempt)
        }
        await delegate.waitForEnd()
        #expect(delegate.keptFiles.first == data)
        #expect(transport.jobs.map(\.offset) == (0..<10).map { Int64($0 * 1_000) })
        #expect(clock.uptime == .milliseconds(45))
        await library.close()
    }

    @Test func theBackoffRestartsSmallAfterProgress() async throws {
        let transport = InMemoryTransport(chunkSize: 1_000)
        let lost = TransportError(.connectionLost, "connection reset")
        // Two attempts without progress (waits of 100 ms, then 200 ms), one with, then waiting.
        let url = transport.serve(randomData(10_000, seed: 4), at: "f", script: [.fail(lost), .fail(lost), .failAfter(1_000, lost), .stallAfter(0)])
        let library = try open(transport, retry: RetryPolicy(maxAttempts: 5, baseDelay: .milliseconds(100), maxDelay: .seconds(10)))
        let asset = try await library.addIssue(name: "i", date: Date()).addAsset(AssetRequest(url: url))
        try await asset.download()
        var waits: [(attempt: Int, left: Duration)] = []
        for attempt in 1...3 {
            let shown = try await clock.retryShown(by: asset)
            waits.append(shown)
            try await clock.runRetry(after: shown.left, of: transport, jobs: attempt)
        }
        // The attempt numbers shown: 2, 3, then 1 again after progress; the wait after progress
        // is the first one's again (100 ms), not the next doubling (400 ms).
        #expect(waits.map(\.attempt) == [2, 3, 1])
        #expect(waits.map(\.left) == [.milliseconds(100), .milliseconds(200), .milliseconds(100)])
        #expect(clock.uptime == .milliseconds(400))
        #expect(transport.jobs.map(\.offset) == [0, 0, 0, 1_000])
        await library.close()
    }

    @Test func noProgressTimeoutFailsAnAssetWithAttemptsLeft() async throws {
        let transport = InMemoryTransport()
        let error = TransportError(.serverError, "HTTP 503")
        let url = transport.serve(Data("x".utf8), at: "t", script: Array(repeating: .fail(error), count: 1_000))
        // Retries 20 ms, then 40 ms apart: attempts at 0, 20, 60, 100, …, 300 ms. At 260 ms the
        // next retry (40 ms) still starts within the limit (300 ms, not past it); the attempt at
        // 300 ms fails and its retry would start past it: the asset gives up then.
        let retry = RetryPolicy(maxAttempts: 1_000, baseDelay: .milliseconds(20), maxDelay: .milliseconds(40),
                                noProgressTimeout: .milliseconds(300))
        let library = try open(transport, retry: retry)
        let asset = try await library.addIssue(name: "i", date: Date()).addAsset(AssetRequest(url: url))
        let delegate = RecordingDelegate()
        try await asset.download(delegate: delegate)
        var starts: [Duration] = [.zero]
        for attempt in 1...8 {
            try await eventually("attempt \(attempt)") { transport.jobs.count == attempt }
            let shown = try await clock.retryShown(by: asset)
            try await clock.runRetry(after: shown.left, of: transport, jobs: attempt)
            starts.append(clock.uptime)
        }
        await delegate.waitForEnd()
        #expect(starts == [0, 20, 60, 100, 140, 180, 220, 260, 300].map { .milliseconds($0) })
        #expect(transport.jobs.count == 9)
        // It gave up at 300 ms: no retry was timed.
        #expect(clock.uptime == .milliseconds(300))
        #expect(clock.freshSleeps(of: .milliseconds(40)) == 0, "\(clock.pendingSleeps)")
        guard case .failed(let code, let message) = delegate.events.last else {
            Testing.Issue.record("expected a failure, got \(delegate.events)")
            return
        }
        #expect(code == "transport")
        #expect(message.contains("HTTP 503"))
        #expect(message.contains("no progress within the 0.3 s no-progress timeout"), "\(message)")
        await library.close()
    }

    @Test func progressKeepsTheNoProgressTimeoutAway() async throws {
        // Ten attempts, each bringing 1,000 bytes in two chunks 30 ms apart, then failing 30 ms
        // later, retried 5 ms after: 95 ms between two attempts with progress, 915 ms in all,
        // against a 100 ms timeout: it completes.
        let transport = InMemoryTransport(chunkSize: 500, chunkDelay: .milliseconds(30), clock: clock)
        let data = randomData(10_000, seed: 5)
        let lost = TransportError(.connectionLost, "connection reset")
        let url = transport.serve(data, at: "f", script: Array(repeating: .failAfter(1_000, lost), count: 9))
        let retry = RetryPolicy(maxAttempts: 2, baseDelay: .milliseconds(5), maxDelay: .milliseconds(10),
                                noProgressTimeout: .milliseconds(100))
        let library = try open(transport, retry: retry)
        let asset = try await library.addIssue(name: "i", date: Date()).addAsset(AssetRequest(url: url))
        let delegate = RecordingDelegate()
        try await asset.download(delegate: delegate)
        for attempt in 1...10 {
            for _ in 0..<(attempt < 10 ? 3 : 2) {
                try await clock.waitForSleep(of: .milliseconds(30))
                clock.advance(by: .milliseconds(30))
            }
            guard attempt < 10 else { break }
            let shown = try await clock.retryShown(by: asset)
            #expect(shown.left == .milliseconds(5))
            try await clock.runRetry(after: shown.left, of: transport, jobs: attempt)
        }
        await delegate.waitForEnd()
        #expect(clock.uptime == .milliseconds(915))
        #expect(delegate.keptFiles.first == data, "\(delegate.events.suffix(1))")
        await library.close()
    }
}
