import Foundation
import Testing
@testable import Paperboy
import PaperboyTesting

/// What a daemon reads of an asset's size when it forwards its end: the scheduler's memory
/// while the asset is there, nothing (never a store read) once it left.
@Suite("An asset's bytes read from memory", .timeLimit(.minutes(2)))
struct BytesInMemoryTests {
    let folder = TempFolder()

    @Test func theBytesOfAnAssetInMemoryAndNoneForOneThatLeftOrNeverCame() async throws {
        let transport = InMemoryTransport()
        let stalled = transport.serve(Data(count: 10_000), at: "stall", script: [.stallAfter(3_000)])
        let whole = transport.serve(Data(count: 4_000), at: "whole")
        let library = try Library.open(at: folder.file("library"), transports: TransportRegistry([transport]),
                                       configuration: Library.Configuration.forTests())
        let local = try #require(library.local)
        let issue = try await library.addIssue(name: "i", date: Date())
        let running = try await issue.addAsset(AssetRequest(url: stalled, destinationPath: "s"))
        let delivered = try await issue.addAsset(AssetRequest(url: whole, destinationPath: "w"))
        let idle = try await issue.addAsset(AssetRequest(url: whole, destinationPath: "idle"))

        try await running.download()
        try await eventually("3,000 bytes of the stalled transfer in memory", seen: "\(String(describing: local.bytesInMemory(ofAsset: running.identifier)))") {
            local.bytesInMemory(ofAsset: running.identifier)?.totalBytesWritten == 3_000
        }
        #expect(local.bytesInMemory(ofAsset: running.identifier)?.expectedTotalBytes == 10_000)

        try await delivered.download()
        #expect(try await delivered.waitUntilFinished() == .delivered)
        try await eventually("the delivered asset to leave memory") { local.bytesInMemory(ofAsset: delivered.identifier) == nil }
        #expect(try await delivered.status().totalBytesWritten == 4_000, "the store has it")

        #expect(local.bytesInMemory(ofAsset: idle.identifier) == nil, "never taken into memory")
        #expect(local.bytesInMemory(ofAsset: "no-such-asset") == nil)
        await library.close()
    }
}
