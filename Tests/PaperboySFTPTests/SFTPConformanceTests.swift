import Foundation
import Paperboy
import PaperboySFTP
import PaperboyTestServers
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
