import Foundation
import Paperboy
import PaperboySFTP
import PaperboyTestServers
import PaperboyTesting
import PaperboyTransportTesting
import Testing

/// The shared transport contract, against a real sshd: files published in the server's folder
/// and fetched as `sftp://127.0.0.1:PORT/…`. Checks the fixture cannot support (ignored
/// ranges, refused credentials, drops at a given byte) are skipped with a note.
@Suite("SFTP transport conformance", .timeLimit(.minutes(3)))
struct SFTPConformanceTests {
    @Test(arguments: TransportConformance.Check.allCases)
    func conformance(_ check: TransportConformance.Check) async throws {
        guard let setup = try await SFTPServerSetup.start() else { return }
        let port = setup.server.port
        let fixture = FolderFixture { file in
            URL(string: "sftp://127.0.0.1:\(port)\(file.path.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed)!)")!
        }
        // sshd serves any absolute path, the fixture's folder included.
        chmod(fixture.folder.path, 0o755)
        await TransportConformance(setup.transport(identityFiles: [setup.clientKey]), fixture: fixture).run(check)
    }
}

/// An indexed asset (docs/ChunkIndex.md) over SFTP: the transport reads only the missing chunks'
/// ranges at their offsets, the rest is reused from version 1.
@Suite("SFTP indexed assets", .timeLimit(.minutes(2)))
struct SFTPIndexedAssetTests {
    @Test func aCorrectedVersionReadsOnlyItsChangedChunks() async throws {
        guard let setup = try await SFTPServerSetup.start() else { return }
        let (_, v2) = try await IndexedVersions.made.value
        let root = setup.folder.file("indexed")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        chmod(setup.folder.url.path, 0o755)
        chmod(root.path, 0o755)
        let port = setup.server.port
        let result = try await IndexedVersions.correct(through: setup.transport(), root: root, configuration: setup.configuration()) {
            URL(string: "sftp://127.0.0.1:\(port)\(root.path)/pub/\($0)")!
        }
        #expect(result.outcome == .delivered)
        #expect(result.delivered.map(sha256Hex) == sha256Hex(v2))
        #expect((result.status?.bytesReused ?? 0) >= Int64(v2.count - IndexedVersions.changedBound), "\(String(describing: result.status))")
    }
}
