import Foundation
import Synchronization
import Testing
@testable import Paperboy
import PaperboyTestServers
import PaperboyTesting

@Suite("Scheduler", .timeLimit(.minutes(2)))
struct SchedulerTests {
    let folder = TempFolder()
    var root: URL { folder.file("library") }

    func open(_ transport: InMemoryTransport, _ change: (inout Library.Configuration) -> Void = { _ in }) throws -> Library {
        var configuration = Library.Configuration.forTests()
        change(&configuration)
        return try Library.open(at: root, transports: TransportRegistry([transport]), configuration: configuration)
    }

    /// Retries on a test clock with full delays (no jitter): each one's date is known.
    func openTimed(_ transport: InMemoryTransport, _ clock: TestClock, retry: RetryPolicy) throws -> Library {
        try open(transport) {
            $0.clock = clock
            $0.retry = retry
            $0.retryJitter = { _ in 1 }
        }
    }

    @Test func retryableErrorsAreRetriedWithBackoff() async throws {
        let transport = InMemoryTransport()
        let clock = TestClock()
        let error = TransportError(.serverError, "HTTP 503")
        let url = transport.serve(Data("ok".utf8), at: "r", script: [.fail(error), .fail(error), .serve])
        let library = try openTimed(transport, clock, retry: RetryPolicy(maxAttempts: 5, baseDelay: .milliseconds(20), maxDelay: .milliseconds(40)))
        let asset = try await library.addIssue(name: "i", date: Date()).addAsset(AssetRequest(url: url, destinationPath: "r"))
        try await asset.download()
        // Attempt 2 after 20 ms, attempt 3 after twice that; each starts at its date, not 1 ms before.
        for (attempt, delay) in [(2, Duration.milliseconds(20)), (3, .milliseconds(40))] {
            let shown = try await clock.retryShown(by: asset)
            #expect(shown.attempt == attempt && shown.left == delay, "\(shown)")
            try await clock.runRetry(after: shown.left, of: transport, jobs: attempt - 1)
        }
        await library.waitUntilIdle()
        #expect(asset.state == .delivered)
        #expect(transport.jobs.count == 3)
        #expect(clock.uptime == .milliseconds(60))
        await library.close()
    }

    @Test func attemptsAreBounded() async throws {
        let transport = InMemoryTransport()
        let clock = TestClock()
        let error = TransportError(.timedOut, "no byte for 60 s")
        let url = transport.serve(Data("x".utf8), at: "t", script: Array(repeating: .fail(error), count: 10))
        let library = try openTimed(transport, clock, retry: RetryPolicy(maxAttempts: 3, baseDelay: .milliseconds(5), maxDelay: .milliseconds(20)))
        let asset = try await library.addIssue(name: "i", date: Date()).addAsset(AssetRequest(url: url))
        for round in 0..<2 {
            // Asking again starts a fresh round of attempts: 5 ms, then 10 ms apart.
            let delegate = RecordingDelegate()
            try await asset.download(delegate: delegate)
            for (attempt, delay) in [(2, Duration.milliseconds(5)), (3, .milliseconds(10))] {
                let shown = try await clock.retryShown(by: asset)
                #expect(shown.attempt == attempt && shown.left == delay, "round \(round): \(shown)")
                try await clock.runRetry(after: shown.left, of: transport, jobs: 3 * round + attempt - 1)
            }
            await delegate.waitForEnd()
            #expect(transport.jobs.count == 3 * (round + 1))
            // Given up at the third failure, at once: no fourth attempt is timed.
            #expect(clock.uptime == .milliseconds(15 * (round + 1)))
            #expect(clock.freshSleeps(of: .milliseconds(20)) == 0, "\(clock.pendingSleeps)")
            guard case .failed(let code, let message) = delegate.events.last else {
                Testing.Issue.record("expected failure, got \(delegate.events)")
                return
            }
            #expect(code == "transport")
            #expect(message.contains("gave up after 3 attempts"))
        }
        await library.close()
    }

    /// A retry waiting in the store (due in a second or more) runs when its timer, armed on the
    /// library's clock, wakes: one millisecond after its date, never before it.
    @Test func aRetryWaitingInTheStoreRunsWhenItsTimerWakes() async throws {
        let transport = InMemoryTransport()
        let clock = TestClock()
        let url = transport.serve(Data("ok".utf8), at: "r", script: [.fail(TransportError(.serverError, "HTTP 503")), .serve])
        let library = try openTimed(transport, clock, retry: RetryPolicy(maxAttempts: 3, baseDelay: .seconds(2), maxDelay: .seconds(2)))
        let asset = try await library.addIssue(name: "i", date: Date()).addAsset(AssetRequest(url: url, destinationPath: "r"))
        try await asset.download()
        let shown = try await clock.retryShown(by: asset)
        #expect(shown.attempt == 2 && shown.left == .seconds(2), "\(shown)")
        try await eventually("the retry let go to the store") { library.scheduler.entriesInMemory == 0 }
        // The store keeps dates to the millisecond: its timer wakes 1 ms after the date.
        try await clock.waitForSleep(of: .milliseconds(2_001))
        clock.advance(by: .milliseconds(2_000))
        #expect(clock.pendingSleeps.contains(.milliseconds(1)), "\(clock.pendingSleeps)")
        #expect(transport.jobs.count == 1)
        clock.advance(by: .milliseconds(1))
        await library.waitUntilIdle()
        #expect(asset.state == .delivered)
        #expect(transport.jobs.count == 2)
        await library.close()
    }

    @Test func fatalErrorsAreNotRetried() async throws {
        let transport = InMemoryTransport()
        let library = try open(transport)
        let asset = try await library.addIssue(name: "i", date: Date()).addAsset(AssetRequest(url: URL(string: "mem://example/missing")!))
        let delegate = RecordingDelegate()
        try await asset.download(delegate: delegate)
        await delegate.waitForEnd()
        #expect(transport.jobs.count == 1)
        guard case .failed(_, let message) = delegate.events.last else {
            Testing.Issue.record("expected failure")
            return
        }
        #expect(message.contains("mem://example/missing"))
        await library.close()
    }

    @Test func retryAfterIsHonoured() {
        let policy = RetryPolicy(maxAttempts: 5, baseDelay: .seconds(1), maxDelay: .seconds(60))
        #expect(policy.delay(afterFailedAttempts: 1, retryAfter: .seconds(30), random: { _ in 0 }) == .seconds(30))
        #expect(policy.delay(afterFailedAttempts: 1, random: { _ in 0 }) == .milliseconds(500))
        #expect(policy.delay(afterFailedAttempts: 1, random: { _ in 1 }) == .seconds(1))
        #expect(policy.delay(afterFailedAttempts: 3, random: { _ in 1 }) == .seconds(4))
        #expect(policy.delay(afterFailedAttempts: 20, random: { _ in 1 }) == .seconds(60))
        #expect(policy.delay(afterFailedAttempts: 20, random: { _ in 0 }) == .seconds(30))
    }

    /// The limits are reached and never passed. The first transfers are held at their first
    /// bytes, so that the three that may run at once are seen running together whatever the
    /// machine's pace (with 1 ms chunks, a loaded machine could end one before the third began).
    @Test func perHostAndGlobalLimitsAreHonoured() async throws {
        let transport = InMemoryTransport(chunkSize: 1024)
        let holding = HoldingTransport(base: transport, holdingAfter: 1)
        var configuration = Library.Configuration.forTests()
        configuration.maxConcurrentTransfers = 3
        configuration.maxTransfersPerHost = 2
        let library = try Library.open(at: root, transports: TransportRegistry([holding]), configuration: configuration)
        let issue = try await library.addIssue(name: "i", date: Date())
        var requests: [(AssetRequest, JSONValue?)] = []
        for index in 0..<30 {
            let host = index.isMultiple(of: 2) ? "a.example" : "b.example"
            let url = transport.serve(randomData(8 * 1024, seed: UInt64(index)), at: "f\(index)", host: host)
            requests.append((AssetRequest(url: url, destinationPath: "f\(index)"), nil))
        }
        let assets = try await issue.addAssets(requests)
        for asset in assets { try await asset.download() }
        // f0 and f2 on a.example, f1 on b.example: the global limit, and a.example's.
        try await eventually("three transfers held", seen: "\(transport.jobs.count) started") {
            holding.isHolding && transport.jobs.count == 3
        }
        #expect(transport.maxConcurrentTotal == 3)
        #expect(transport.maxConcurrent(host: "a.example") == 2)
        #expect(transport.maxConcurrent(host: "b.example") == 1)
        holding.release()
        await library.waitUntilIdle()
        #expect(assets.allSatisfy { $0.state == .delivered })
        #expect(transport.maxConcurrent(host: "a.example") <= 2)
        #expect(transport.maxConcurrent(host: "b.example") <= 2)
        #expect(transport.maxConcurrentTotal <= 3)
        await library.close()
    }

    @Test func theNextTransferStartsWhileTheLastOneIsMadeDurable() async throws {
        let transport = InMemoryTransport(chunkSize: 1024)
        let library = try open(transport) {
            $0.maxConcurrentTransfers = 1
            $0.syncsToDisk = true
        }
        // The first sync waits (on the durability queue, not the cooperative pool) until the
        // second transfer has started: it cannot if the first still holds the only slot.
        let overlapped = Mutex<Bool?>(nil)
        library.scheduler.durability.beforeSync.set { [transport] in
            guard overlapped.withLock({ $0 == nil }) else { return }  // the first file only
            let started = transport.blockUntilJobs(2, timeout: .seconds(30))
            overlapped.withLock { $0 = started }
        }
        let issue = try await library.addIssue(name: "i", date: Date())
        let first = try await issue.addAsset(AssetRequest(url: transport.serve(randomData(4096, seed: 1), at: "a"), destinationPath: "a"))
        let second = try await issue.addAsset(AssetRequest(url: transport.serve(randomData(4096, seed: 2), at: "b"), destinationPath: "b"))
        try await first.download()
        try await second.download()
        await library.waitUntilIdle()
        #expect(overlapped.withLock { $0 } == true)
        #expect(first.state == .delivered && second.state == .delivered)
        #expect(transport.maxConcurrentTotal == 1)
        await library.close()
    }

    @Test func higherPriorityRunsFirstAndFIFOWithinOne() async throws {
        let transport = InMemoryTransport()
        let library = try open(transport) { $0.maxConcurrentTransfers = 1 }
        let issue = try await library.addIssue(name: "i", date: Date())
        let blocker = transport.serve(Data("b".utf8), at: "blocker", script: [.stallAfter(0)])
        let first = try await issue.addAsset(AssetRequest(url: blocker))
        try await first.download()
        try await eventually("blocker running") { transport.jobs.count == 1 }
        var order: [String] = []
        for (name, priority) in [("low1", 0), ("high1", 5), ("low2", 0), ("high2", 5), ("mid", 2)] {
            let url = transport.serve(Data(name.utf8), at: name)
            try await issue.addAsset(AssetRequest(url: url, priority: priority)).download()
            order.append(name)
        }
        try await first.cancel()
        await library.waitUntilIdle()
        #expect(transport.jobs.dropFirst().map(\.url.lastPathComponent) == ["high1", "high2", "mid", "low1", "low2"])
        await library.close()
    }

    @Test func readyQueueSkipsStaleEntries() {
        var queue = ReadyQueue()
        queue.push(id: "a", seq: 1, priority: 0, host: "h")
        queue.push(id: "b", seq: 2, priority: 0, host: "h")
        queue.push(id: "c", seq: 3, priority: 1, host: "g")
        #expect(queue.pop(hostHasRoom: { _ in true }, isReady: { _ in true })?.id == "c")
        #expect(queue.pop(hostHasRoom: { _ in true }, isReady: { $0 != "a" })?.id == "b")
        #expect(queue.pop(hostHasRoom: { _ in true }, isReady: { _ in true }) == nil)
        queue.push(id: "d", seq: 4, priority: 0, host: "full")
        #expect(queue.pop(hostHasRoom: { $0 != "full" }, isReady: { _ in true }) == nil)
        #expect(queue.pop(hostHasRoom: { _ in true }, isReady: { _ in true })?.id == "d")
    }
}
