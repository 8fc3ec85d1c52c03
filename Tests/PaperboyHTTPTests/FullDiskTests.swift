import Foundation
import Paperboy
import PaperboyHTTP
import PaperboyTestServers
import PaperboyTesting
import Testing

/// Issue 26, case 6: a body without a length, into an asset without `sha256` or size, on a
/// file system the test fills for real (a tmpfs holding the library and its database).
@Suite("A full disk never strands the library", .serialized, .timeLimit(.minutes(3)))
struct FullDiskTests {
    /// Twice the disk, sent chunked (no Content-Length) and without a validator: nothing tells
    /// the library how much is coming, and the partial file can never be resumed.
    static let diskMegabytes = 24
    static let body = Task { try await offThePool { Data(repeating: 0x5A, count: 2 * diskMegabytes << 20) } }

    @Test func anEndlessBodyFailsWhileTheDatabaseCanRecordItAndFreesTheDisk() async throws {
        guard let disk = try SmallFileSystem.mount(megabytes: Self.diskMegabytes) else { return }
        defer { disk.unmount() }
        let body = try await Self.body.value
        let server = try FaultServer { _ in ServerResponse(status: 200, body: body, chunked: true) }
        defer { server.stop() }
        let root = disk.url.appendingPathComponent("library")
        let registry = TransportRegistry([HTTPTransport()])
        var configuration = Library.Configuration.forTests(attempts: 3)
        configuration.minFreeSpace = .bytes(4 << 20)

        let library = try Library.open(at: root, transports: registry, configuration: configuration)
        let asset = try await library.addIssue(name: "weekly", date: Date()).addAsset(AssetRequest(url: server.url("/endless.bin")))
        let delegate = RecordingDelegate()
        try await asset.download(delegate: delegate)
        await delegate.waitForEnd()
        await library.close()

        // The delegate heard why, once: the floor, not a retry.
        let failures = delegate.events.compactMap { event -> (code: String, message: String)? in
            if case .failed(let code, let message) = event { (code, message) } else { nil }
        }
        #expect(failures.count == 1, "\(delegate.events.suffix(3))")
        #expect(failures.first?.code == LibraryError.Code.insufficientStorage.rawValue, "\(failures)")
        #expect(failures.first?.message.contains("min_free_space") == true, "\(failures)")
        #expect(failures.first?.message.contains(server.url("/endless.bin").absoluteString) == true, "\(failures)")
        #expect(!(failures.first?.message.contains("gave up after") ?? true), "not retried: \(failures)")

        // The partial, which no validator could ever resume, is gone, and so is its space.
        let partials = (try? FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent(".partial").path)) ?? []
        #expect(partials.isEmpty, "left behind: \(partials)")
        #expect(disk.availableBytes > Int64(Self.diskMegabytes - 4) << 20, "\(disk.availableBytes) bytes free")

        // `status` (the read-only open) tells the truth: failed, with the reason.
        let reader = try Library.openForReading(at: root)
        var listed: [AssetListing] = []
        try await reader.issue(named: "weekly")?.forEachAssetListing { listed.append($0) }
        #expect(listed.count == 1)
        guard case .failed(let message)? = listed.first?.state else {
            Testing.Issue.record("status shows \(listed.first.map { "\($0.state)" } ?? "nothing"), not failed")
            return
        }
        #expect(message.contains("not enough space"), "\(message)")
        #expect(listed.first?.failureCode == LibraryError.Code.insufficientStorage.rawValue)
        await reader.close()

        // And so does the library after a restart.
        let reopened = try Library.open(at: root, transports: registry, configuration: configuration)
        let again = try await #require(reopened.issue(named: "weekly")?.assets.first)
        #expect(again.state.name == "failed", "\(again.state)")
        await reopened.close()
    }
}
