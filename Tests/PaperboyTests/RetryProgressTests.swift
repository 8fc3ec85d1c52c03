import Foundation
import Testing
@testable import Paperboy
import PaperboyTesting

/// Retries counted by progress, and the overall no-progress timeout (issue 16, case 1).
@Suite("Retries by progress")
struct RetryProgressTests {
    let folder = TempFolder()

    func open(_ transport: InMemoryTransport, retry: RetryPolicy) throws -> Library {
        var configuration = testConfiguration()
        configuration.retry = retry
        return try Library.open(at: folder.file("library"), transports: TransportRegistry([transport]), configuration: configuration)
    }

    /// Downloads `url` until it is delivered or fails; returns what the delegate saw and how long it took.
    func download(_ url: URL, from transport: InMemoryTransport, retry: RetryPolicy) async throws -> (RecordingDelegate, Duration) {
        let library = try open(transport, retry: retry)
        let asset = try library.addIssue(name: "i", date: Date()).addAsset(AssetRequest(url: url))
        let delegate = RecordingDelegate()
        let started = ContinuousClock.now
        asset.download(delegate: delegate)
        await delegate.waitForEnd()
        let elapsed = ContinuousClock.now - started
        await library.close()
        return (delegate, elapsed)
    }

    @Test func eachAttemptWithProgressRestartsTheCount() async throws {
        let transport = InMemoryTransport(chunkSize: 1_000)
        let data = randomData(10_000, seed: 3)
        let lost = TransportError(.connectionLost, "connection reset")
        // Nine attempts that each bring 1,000 bytes, two attempts allowed without progress.
        let url = transport.serve(data, at: "f", script: Array(repeating: .failAfter(1_000, lost), count: 9))
        let retry = RetryPolicy(maxAttempts: 2, baseDelay: .milliseconds(5), maxDelay: .milliseconds(10))
        let (delegate, _) = try await download(url, from: transport, retry: retry)
        #expect(delegate.keptFiles.first == data)
        #expect(transport.jobs.map(\.offset) == (0..<10).map { Int64($0 * 1_000) })
    }

    @Test func theBackoffRestartsSmallAfterProgress() async throws {
        let transport = InMemoryTransport(chunkSize: 1_000)
        let lost = TransportError(.connectionLost, "connection reset")
        // Two attempts without progress (waits of 50-100 ms, then 100-200 ms), one with, then waiting.
        let url = transport.serve(randomData(10_000, seed: 4), at: "f", script: [.fail(lost), .fail(lost), .failAfter(1_000, lost), .stallAfter(0)])
        let library = try open(transport, retry: RetryPolicy(maxAttempts: 5, baseDelay: .milliseconds(100), maxDelay: .seconds(10)))
        let asset = try library.addIssue(name: "i", date: Date()).addAsset(AssetRequest(url: url))
        asset.download()
        // Each wait as first seen: the attempt number shown and the time left.
        var waits: [(attempt: Int, left: TimeInterval)] = []
        try await eventually("four attempts") {
            if case .waiting(.retry(let until, let attempt)) = asset.state, waits.last?.attempt != attempt {
                waits.append((attempt, until.timeIntervalSinceNow))
            }
            return transport.jobs.count == 4
        }
        // The attempt numbers shown: 2, 3, then 1 again after progress.
        #expect(waits.map(\.attempt) == [2, 3, 1])
        // The wait after progress is the first one's again (50-100 ms), not the next doubling (200-400 ms).
        #expect(waits.count == 3 && waits[2].left <= 0.1, "\(waits)")
        await library.close()
    }

    @Test func noProgressTimeoutFailsAnAssetWithAttemptsLeft() async throws {
        let transport = InMemoryTransport()
        let error = TransportError(.serverError, "HTTP 503")
        let url = transport.serve(Data("x".utf8), at: "t", script: Array(repeating: .fail(error), count: 1_000))
        let retry = RetryPolicy(maxAttempts: 1_000, baseDelay: .milliseconds(20), maxDelay: .milliseconds(40),
                                noProgressTimeout: .milliseconds(300))
        let (delegate, elapsed) = try await download(url, from: transport, retry: retry)
        guard case .failed(let code, let message) = delegate.events.last else {
            Testing.Issue.record("expected a failure, got \(delegate.events)")
            return
        }
        #expect(code == "transport")
        #expect(message.contains("HTTP 503"))
        #expect(message.contains("no progress within the 0.3 s no-progress timeout"), "\(message)")
        // Long before the thousand attempts allowed (20-40 ms apart: at most about 15 fit in 300 ms).
        #expect(transport.jobs.count < 30, "\(transport.jobs.count) attempts")
        #expect(elapsed < .seconds(20))
    }

    @Test func progressKeepsTheNoProgressTimeoutAway() async throws {
        // Ten attempts of about 60 ms each, 600 ms in all, each bringing 1,000 bytes, against a
        // 250 ms timeout: it completes.
        let transport = InMemoryTransport(chunkSize: 500, chunkDelay: .milliseconds(30))
        let data = randomData(10_000, seed: 5)
        let lost = TransportError(.connectionLost, "connection reset")
        let url = transport.serve(data, at: "f", script: Array(repeating: .failAfter(1_000, lost), count: 9))
        let retry = RetryPolicy(maxAttempts: 2, baseDelay: .milliseconds(5), maxDelay: .milliseconds(10),
                                noProgressTimeout: .milliseconds(250))
        let (delegate, elapsed) = try await download(url, from: transport, retry: retry)
        #expect(elapsed > .milliseconds(250))
        #expect(delegate.keptFiles.first == data, "\(delegate.events.suffix(1))")
    }
}
