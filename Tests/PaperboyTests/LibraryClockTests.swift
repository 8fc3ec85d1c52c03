import Foundation
import Testing
@testable import Paperboy
import PaperboyTesting

/// Every decision the library takes at a time reads `Library.Configuration.clock`: on a test
/// clock each is taken at its exact moment, and not a millisecond before.
@Suite("Decisions on the library's clock", .timeLimit(.minutes(2)))
struct LibraryClockTests {
    let folder = TempFolder()
    /// Starts at 2027-01-15 08:00:00 UTC.
    let clock = TestClock()

    func open(_ transport: InMemoryTransport = InMemoryTransport(), _ change: (inout Library.Configuration) -> Void = { _ in }) throws -> Library {
        var configuration = Library.Configuration.forTests(clock: clock)
        configuration.retryJitter = { _ in 1 }
        change(&configuration)
        return try Library.open(at: folder.file("library"), transports: TransportRegistry([transport]), configuration: configuration)
    }

    @Test func contentAvailableIsThrottledOnTheLibrarysClock() async throws {
        let library = try open()
        let start = clock.now
        await #expect(try library.contentAvailable() == .refresh)
        #expect(library.lastContentRefresh == start)
        clock.advance(by: .seconds(86_400) - .milliseconds(1))
        await #expect(try library.contentAvailable() == .throttled(nextAllowed: start.addingTimeInterval(86_400)))
        clock.advance(by: .milliseconds(1))
        await #expect(try library.contentAvailable() == .refresh)
        await library.close()
    }

    @Test func anIssueIsAddedAtTheLibrarysTime() async throws {
        let library = try open()
        clock.advance(by: .milliseconds(1_500))
        try await library.addIssue(name: "i", date: Date(timeIntervalSince1970: 0))
        #expect(library.scheduler.store.issue(named: "i")?.addedAt == clock.now)
        await library.close()
    }

    @Test func aFetchIsRetriedOnTheLibrarysClock() async throws {
        let transport = InMemoryTransport()
        let url = transport.serve(Data("catalog".utf8), at: "catalog.json", script: [.fail(TransportError(.serverError, "HTTP 503"))])
        let library = try open(transport)
        let fetching = Task { try await library.fetchData(from: url) }
        // The first retry of `forTests`'s policy: 5 ms later.
        try await clock.waitForSleep(of: .milliseconds(5))
        clock.advance(by: .milliseconds(4))
        #expect(transport.jobs.count == 1)
        clock.advance(by: .milliseconds(1))
        #expect(try await fetching.value == Data("catalog".utf8))
        #expect(transport.jobs.count == 2)
        await library.close()
    }

    @Test func theBandwidthScheduleChangesTheLimitAtItsMinute() async throws {
        let library = try open()
        let utc = try #require(TimeZone(identifier: "UTC"))
        library.setBandwidthSchedule(BandwidthSchedule([
            .init(minuteOfDay: 7 * 60, bytesPerSecond: 1_000_000),
            .init(minuteOfDay: 8 * 60 + 30, bytesPerSecond: 2_000_000),
        ], timeZone: utc))
        // 08:00: the 07:00 limit, and a sleep until 08:30.
        try await eventually("the 07:00 limit", seen: "\(String(describing: library.bandwidthLimiter.bytesPerSecond))") {
            library.bandwidthLimiter.bytesPerSecond == 1_000_000
        }
        try await clock.waitForSleep(of: .seconds(1_800))
        clock.advance(by: .seconds(1_800) - .milliseconds(1))
        #expect(library.bandwidthLimiter.bytesPerSecond == 1_000_000)
        clock.advance(by: .milliseconds(1))
        try await eventually("the 08:30 limit", seen: "\(String(describing: library.bandwidthLimiter.bytesPerSecond))") {
            library.bandwidthLimiter.bytesPerSecond == 2_000_000
        }
        await library.close()
    }

    /// Progress is reported at most once per `progressInterval` (20 ms here) of the library's
    /// clock: chunks 10 ms apart are reported every second chunk.
    @Test func progressIsCoalescedOnTheLibrarysClock() async throws {
        let transport = InMemoryTransport(chunkSize: 1_000, chunkDelay: .milliseconds(10), clock: clock)
        let data = randomData(10_000)
        let url = transport.serve(data, at: "f")
        let library = try open(transport)
        let asset = try await library.addIssue(name: "i", date: Date()).addAsset(AssetRequest(url: url))
        let delegate = RecordingDelegate()
        try await asset.download(delegate: delegate)
        for _ in 0..<10 {
            try await clock.waitForSleep(of: .milliseconds(10))
            clock.advance(by: .milliseconds(10))
        }
        await delegate.waitForEnd()
        let totals = delegate.events.compactMap { if case .progress(_, let total, _) = $0 { total } else { nil } }
        #expect(totals == [2_000, 4_000, 6_000, 8_000, 10_000])
        #expect(delegate.keptFiles == [data])
        await library.close()
    }
}
