import Foundation
import Paperboy
import PaperboySFTP
import PaperboyTestServers
import PaperboyTesting
import Testing

/// Large files read over two connections into a segment of the core's sink, against sshd.
@Suite("SFTP split over two connections", .timeLimit(.minutes(2)))
struct SFTPSplitTests {
    /// The test file, made once on a thread of its own: megabytes take a debug build tens of
    /// milliseconds, too long for the cooperative pool (and made by every test at once, even
    /// for a thread each).
    static let made = Task { try await offThePool { randomData(8 << 20 + 777, seed: 11) } }
    static func makeData() async throws -> Data { try await made.value }

    /// Splits anything of 1 MiB or more; small reads so that an interruption finds work left.
    func transport(_ setup: SFTPServerSetup) -> SFTPTransport { setup.transport(readSize: 256 << 10, splitThreshold: 1 << 20) }

    func library(_ setup: SFTPServerSetup, over transport: (any Transport)? = nil, attempts: Int = 1) throws -> Library {
        try Library.open(at: setup.folder.file("library"), transports: TransportRegistry([transport ?? self.transport(setup)]),
                         configuration: setup.configuration(attempts: attempts))
    }

    @Test func aLargeFileIsReadOverTwoConnectionsAndIsIntact() async throws {
        let data = try await Self.makeData()
        guard let setup = try await SFTPServerSetup.start() else { return }
        let url = try setup.publish(data, as: "large.bin")
        let library = try library(setup)
        let asset = try await library.addIssue(name: "issue", date: Date()).addAsset(AssetRequest(url: url, sha256: sha256Hex(data)))
        let delegate = RecordingDelegate()
        try await asset.download(delegate: delegate)
        await delegate.waitForEnd()
        await library.close()
        #expect(delegate.keptFiles.first.map(sha256Hex) == sha256Hex(data))
        #expect(setup.acceptedLogins == 2)
    }

    @Test func anInterruptedSplitDownloadResumesFromTheBytesBeforeTheGap() async throws {
        let data = try await Self.makeData()
        guard let setup = try await SFTPServerSetup.start() else { return }
        let url = try setup.publish(data, as: "large.bin")
        // Held once 2 MiB reached the library's sink and segments, until both connections are
        // dropped: the bytes that still arrive were asked for before the drop (the write-behind's
        // four buffers, each connection's requests in flight), about 5 MiB at most, so the
        // transfer is cut in the middle however the machine is paced.
        let held = HoldingTransport(base: transport(setup), holdingAfter: 2 << 20)
        let library = try library(setup, over: held, attempts: 2)
        let request = AssetRequest(url: url, sha256: sha256Hex(data))
        let asset = try await library.addIssue(name: "issue", date: Date()).addAsset(request)
        let delegate = RecordingDelegate()
        try await asset.download(delegate: delegate)
        try await eventually("the transfer held after 2 MiB", seen: "\(held.bytesTaken) bytes, state \(asset.state)") { held.isHolding }
        #expect(setup.acceptedLogins == 2)
        setup.server.dropConnections()
        held.release()
        await delegate.waitForEnd()
        await library.close()
        #expect(delegate.keptFiles.first.map(sha256Hex) == sha256Hex(data))
        // The second attempt continued from bytes on disk, and split what was left.
        let resumed = delegate.events.compactMap { event -> Int64? in
            if case .resumed(let total, _) = event { return total }
            return nil
        }
        #expect(resumed.count == 1)
        #expect(resumed.allSatisfy { $0 > 0 && $0 < Int64(data.count) })
        #expect(setup.acceptedLogins == 4)
    }

    @Test func aSharedConnectionClosedByTheServerIsReplacedTransparently() async throws {
        guard let setup = try await SFTPServerSetup.start() else { return }
        let small = randomData(300_000, seed: 3)
        let url = try setup.publish(small, as: "small.bin")
        let transport = setup.transport()
        try await transport.transfer(.forTests(url), into: RecordingSink(answer: setup.keyAnswer))
        // The server drops the idle connection; the next transfer may still be handed it.
        setup.server.dropConnections()
        let sink = RecordingSink(answer: setup.keyAnswer)
        try await transport.transfer(.forTests(url), into: sink)
        #expect(sha256Hex(sink.data) == sha256Hex(small))
        #expect(setup.acceptedLogins == 2)
    }
}
