import Foundation
import Testing
@testable import Paperboy
import PaperboyTesting

/// The limiter's statistics reach the store while transfers run, and the recorder sleeps
/// between transfers without missing the next one; its second is the library clock's.
@Suite("Limiter statistics in the store", .timeLimit(.minutes(2)))
struct LimiterStatisticsTests {
    @Test func theRecorderParksWhileIdleAndRecordsTheNextTransfer() async throws {
        let folder = TempFolder()
        let clock = TestClock()
        let transport = InMemoryTransport(chunkSize: 64 * 1024)
        let library = try Library.open(at: folder.file("lib"), transports: TransportRegistry([transport]),
                                       configuration: .forTests(clock: clock))
        let recorded = { library.recordedBandwidthStatistics?.bytesGranted }
        let parked = { library.scheduler.state.withLock { $0.statisticsWaiter != nil } }
        let issue = try await library.addIssue(name: "i", date: Date())
        let first = try await issue.addAsset(AssetRequest(url: transport.serve(randomData(600_000), at: "a.bin"), destinationPath: "a.bin"))
        try await first.download()
        #expect(try await first.waitUntilFinished() == .delivered)
        // Nothing is recorded before the recorder's second has passed.
        try await clock.waitForSleep(of: Scheduler.statisticsInterval)
        #expect(recorded() == nil)
        clock.advance(by: Scheduler.statisticsInterval)
        try await eventually("the first transfer's bytes recorded", seen: "\(String(describing: recorded()))") { recorded() == 600_000 }
        // A second without a byte: the recorder parks instead of waking every second.
        try await clock.waitForSleep(of: Scheduler.statisticsInterval)
        #expect(!parked())
        clock.advance(by: Scheduler.statisticsInterval)
        try await eventually("the recorder parked", seen: "\(clock.pendingSleeps)") { parked() }
        #expect(clock.sleeperCount == 0, "\(clock.pendingSleeps)")

        let second = try await issue.addAsset(AssetRequest(url: transport.serve(randomData(700_000), at: "b.bin"), destinationPath: "b.bin"))
        try await second.download()
        #expect(try await second.waitUntilFinished() == .delivered)
        try await clock.waitForSleep(of: Scheduler.statisticsInterval)
        #expect(recorded() == 600_000)
        clock.advance(by: Scheduler.statisticsInterval)
        try await eventually("the second transfer's bytes recorded", seen: "\(String(describing: recorded()))") { recorded() == 1_300_000 }
        await library.close()
        #expect(!parked())
    }
}
