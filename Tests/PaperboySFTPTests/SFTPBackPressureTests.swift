import Foundation
import Paperboy
import PaperboySFTP
import PaperboyTestServers
import PaperboyTesting
import Testing

/// The SFTP transport under the core's back-pressure, against sshd.
@Suite("SFTP back-pressure", .serialized, .timeLimit(.minutes(2)))
struct SFTPBackPressureTests {
    /// A reader that has read everything and waits for the file writes to drain (here slowed by
    /// a bandwidth limit) is waiting for the disk, not the server: no idle timeout.
    @Test func aReaderWaitingForItsWritesIsNotIdle() async throws {
        guard let setup = try await SFTPServerSetup.start() else { return }
        let small = randomData(1_500_000, seed: 12)
        let url = try setup.publish(small, as: "slow-disk.bin")
        // The idle timeout is the session thread's, in real time: a 1 s one against 2.5 s of writes.
        let configuration = setup.configuration(attempts: 1, idleTimeout: .seconds(1))
        let library = try Library.open(at: setup.folder.file("library"), transports: TransportRegistry([setup.transport()]),
                                       configuration: configuration)
        // About 2.5 s of writes behind a read that ends at once.
        let request = AssetRequest(url: url, sha256: sha256Hex(small), maxBytesPerSecond: 600_000)
        let asset = try await library.addIssue(name: "issue", date: Date()).addAsset(request)
        let delegate = RecordingDelegate()
        try await asset.download(delegate: delegate)
        await delegate.waitForEnd()
        await library.close()
        #expect(!delegate.events.contains { if case .failed = $0 { true } else { false } }, "events: \(delegate.events)")
        #expect(delegate.keptFiles.first.map(sha256Hex) == sha256Hex(small))
    }
}
