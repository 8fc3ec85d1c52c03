import Foundation
import Testing
@testable import Paperboy
import PaperboyTesting

/// The limiter's statistics reach the store while transfers run, and the recorder sleeps
/// between transfers without missing the next one.
@Suite("Limiter statistics in the store")
struct LimiterStatisticsTests {
    @Test func theRecorderParksWhileIdleAndRecordsTheNextTransfer() async throws {
        let folder = TempFolder()
        let transport = InMemoryTransport(chunkSize: 64 * 1024, chunkDelay: .milliseconds(1))
        var configuration = testConfiguration()
        configuration.bandwidthLimit = 2_000_000
        let library = try Library.open(at: folder.file("lib"), transports: TransportRegistry([transport]), configuration: configuration)
        let issue = try library.addIssue(name: "i", date: Date())
        let first = try issue.addAsset(AssetRequest(url: transport.serve(randomData(600_000), at: "a.bin"), destinationPath: "a.bin"))
        first.download()
        #expect(try await first.waitUntilFinished() == .delivered)
        try await eventually("the first transfer's bytes recorded") { library.recordedBandwidthStatistics?.bytesGranted == 600_000 }
        // Idle for more than a tick: the recorder parks.
        try await Task.sleep(for: .milliseconds(1500))
        #expect(library.scheduler.state.withLock { $0.statisticsWaiter != nil })
        let second = try issue.addAsset(AssetRequest(url: transport.serve(randomData(700_000), at: "b.bin"), destinationPath: "b.bin"))
        second.download()
        #expect(try await second.waitUntilFinished() == .delivered)
        try await eventually("the second transfer's bytes recorded") { library.recordedBandwidthStatistics?.bytesGranted == 1_300_000 }
        await library.close()
        #expect(library.scheduler.state.withLock { $0.statisticsWaiter == nil })
    }
}
