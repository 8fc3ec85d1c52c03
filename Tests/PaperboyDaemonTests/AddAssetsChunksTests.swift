import Foundation
import Paperboy
import PaperboyWire
import Testing

/// How `Issue.addAssets` through a daemon cuts its assets into `ADDASSETS` requests
/// (``AddAssetsRequest/chunks(_:)``): each fits a frame with room to spare, in order.
@Suite("ADDASSETS chunks")
struct AddAssetsChunksTests {
    func asset(_ index: Int, userInfoBytes: Int = 0) -> NewAsset {
        NewAsset(request: AssetRequest(url: URL(string: "https://example.com/a\(index)")!, destinationPath: "a\(index)"),
                 userInfo: userInfoBytes > 0 ? .string(String(repeating: "u", count: userInfoBytes)) : nil)
    }

    func weight(_ chunk: ArraySlice<NewAsset>) throws -> Int {
        try chunk.map { try DaemonProtocol.encoder.encode($0).count + 1 }.reduce(0, +)
    }

    @Test func chunksKeepTheOrderAndEachWeighsAtMostHalfAFrame() throws {
        // About 60 KiB each: two to a chunk.
        let assets = (0..<7).map { asset($0, userInfoBytes: 60_000) }
        let chunks = AddAssetsRequest.chunks(assets)
        #expect(chunks.map(\.count) == [2, 2, 2, 1])
        #expect(chunks.flatMap { $0.map(\.request.destinationPath) } == assets.map(\.request.destinationPath))
        for chunk in chunks { #expect(try weight(chunk) <= AddAssetsRequest.maxChunkBytes) }
    }

    @Test func aChunkHoldsAtMostTheAssetsOneRequestTakes() {
        // Half a frame of the lightest items holds fewer than 4,096: the count is checked anyway.
        let assets = (0..<7).map { asset($0) }
        #expect(AddAssetsRequest.chunks(assets, maxCount: 3).map(\.count) == [3, 3, 1])
        #expect(AddAssetsRequest.chunks(assets).map(\.count) == [7])
    }

    @Test func anAssetHeavierThanAChunkTravelsAloneAndNoneMakesNoRequest() {
        let assets = [asset(0), asset(1, userInfoBytes: AddAssetsRequest.maxChunkBytes + 1), asset(2)]
        #expect(AddAssetsRequest.chunks(assets).map { $0.map(\.request.destinationPath) } == [["a0"], ["a1"], ["a2"]])
        #expect(AddAssetsRequest.chunks([]).isEmpty)
    }
}
