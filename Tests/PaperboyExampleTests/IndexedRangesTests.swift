import Foundation
import Paperboy
import PaperboyExec
import PaperboyFile
import PaperboyTestServers
import PaperboyTesting
import Testing

/// Indexed assets (docs/ChunkIndex.md) over the transports other than HTTP that fetch one range
/// (``TransportCapabilities/ranges``): local files, and a helper executable whose `HELLO` lists
/// `ranges`. What the library did not fetch, it reused from version 1 (``AssetStatus/bytesReused``).
@Suite("indexed assets over file and exec ranges", .timeLimit(.minutes(2)))
struct IndexedRangesTests {
    @Test func aLocalFileFetchesOnlyTheChangedChunks() async throws {
        let (_, v2) = try await IndexedVersions.made.value
        let folder = TempFolder()
        let result = try await IndexedVersions.correct(through: FileTransport(), root: folder.url) { folder.url.appendingPathComponent("pub/\($0)") }
        #expect(result.outcome == .delivered)
        #expect(result.delivered.map(sha256Hex) == sha256Hex(v2))
        #expect((result.status?.bytesReused ?? 0) >= Int64(v2.count - IndexedVersions.changedBound), "\(String(describing: result.status))")
    }

    @Test func aHelperListingRangesFetchesOnlyTheChangedChunks() async throws {
        let (_, v2) = try await IndexedVersions.made.value
        let folder = TempFolder()
        let transport = TreeHelper.transport(root: folder.url)
        defer { transport.retireIdleHelpers() }
        let result = try await IndexedVersions.correct(through: transport, root: folder.url) { URL(string: "tree://pub/\($0)")! }
        #expect(result.outcome == .delivered)
        #expect(result.delivered.map(sha256Hex) == sha256Hex(v2))
        #expect((result.status?.bytesReused ?? 0) >= Int64(v2.count - IndexedVersions.changedBound), "\(String(describing: result.status))")
    }

    /// The same helper registered without `.ranges`: the indexed asset is fetched whole.
    @Test func aHelperRegisteredWithoutRangesFetchesTheWholeFile() async throws {
        let (_, v2) = try await IndexedVersions.made.value
        let folder = TempFolder()
        let transport = ExecTransport(scheme: "tree", command: [TreeHelper.path, "--root", folder.url.path])
        defer { transport.retireIdleHelpers() }
        let result = try await IndexedVersions.correct(through: transport, root: folder.url) { URL(string: "tree://pub/\($0)")! }
        #expect(result.outcome == .delivered)
        #expect(result.delivered.map(sha256Hex) == sha256Hex(v2))
        #expect(result.status?.bytesReused == 0, "\(String(describing: result.status))")
    }
}
