import Foundation
import Paperboy
import PaperboySFTP
import PaperboyTestServers
import PaperboyTesting
import Testing

/// What an app sees when an SFTP download fails, against sshd: `LibraryError.reason`.
@Suite("SFTP error reasons", .timeLimit(.minutes(2)))
struct SFTPErrorReasonTests {
    func failure(_ setup: SFTPServerSetup, path: String, credential: Credential) async throws -> (LibraryError?, partialLeft: Bool) {
        var configuration = Library.Configuration.forTests(attempts: 1)
        configuration.credentials = OriginCredentials([
            .init(scope: URLScope(string: "sftp://127.0.0.1:\(setup.server.port)/")!, credential: credential),
        ])
        let root = setup.folder.file("library-\(path)")
        let library = try Library.open(at: root, transports: TransportRegistry([setup.transport()]), configuration: configuration)
        let asset = try await library.addIssue(name: "issue", date: Date()).addAsset(AssetRequest(url: setup.server.url(path)))
        var last: DownloadEvent?
        for await event in try await asset.events() { last = event }
        await library.waitUntilIdle()
        let partialLeft = FileManager.default.fileExists(atPath: root.appendingPathComponent(".partial/\(asset.identifier)").path)
        await library.close()
        guard case .failed(let error) = last else { return (nil, partialLeft) }
        return (error, partialLeft)
    }

    @Test func noSuchFileIsNotFound() async throws {
        guard let setup = try await SFTPServerSetup.start() else { return }
        let (error, partialLeft) = try await failure(setup, path: "missing.bin", credential: Credential(privateKey: setup.clientKey))
        #expect(error?.reason == .notFound, "\(String(describing: error))")
        #expect(error?.isNotFound == true)
        #expect(!partialLeft)
    }

    @Test func aRefusedPasswordIsAnAuthenticationFailure() async throws {
        guard let setup = try await SFTPServerSetup.start() else { return }
        _ = try setup.publish(Data("x".utf8), as: "file.bin")
        let (error, partialLeft) = try await failure(setup, path: "file.bin", credential: Credential(password: "not-the-password"))
        #expect(error?.reason == .authentication, "\(String(describing: error))")
        #expect(error?.message.contains("not-the-password") == false)
        #expect(!partialLeft)
    }
}
