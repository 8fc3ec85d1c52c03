import Foundation
import Paperboy
import PaperboyHTTP
import PaperboyTestServers
import PaperboyTesting
import Testing

/// Reuse across issues (issue 29, "shared across issues"): an indexed asset takes the chunks it
/// needs from any delivered indexed asset of the library, found through the store's chunk table,
/// through the library and a real nginx. What nginx sent (its access log's `$body_bytes_sent`) is
/// what the library fetched.
@Suite("chunk reuse across issues", .timeLimit(.minutes(1)))
struct ChunkTableTests {
    struct Setup {
        let nginx: NginxServer
        let folder: TempFolder
        let library: Library
        let data: Data

        var root: URL { folder.file("library") }

        /// The file served as `/shared.bin`, with its index.
        var request: AssetRequest {
            get throws {
                var request = AssetRequest(url: nginx.url("/shared.bin"), sha256: sha256Hex(data))
                request.index = nginx.url("/shared.bin.pbidx")
                return request
            }
        }

        /// Adds issue `issue` (if new) and the shared file to it at `path`, downloads it, and waits for its end.
        func deliver(to issue: String, path: String) async throws -> (AssetOutcome, AssetStatus?) {
            let found = try await library.issue(named: issue)
            let added: Paperboy.Issue
            if let found { added = found } else { added = try await library.addIssue(name: issue, date: Date()) }
            var request = try request
            request.destinationPath = path
            let asset = try await added.addAsset(request)
            try await asset.download()
            let outcome = try await asset.waitUntilFinished()
            return (outcome, try added.assetStatuses.first { $0.identifier == asset.identifier })
        }

        func delivered(_ issue: String, _ path: String) -> Data? {
            try? Data(contentsOf: root.appendingPathComponent("Issues/\(issue)/\(path)"))
        }

        /// Bytes nginx sent in ranged answers (206) since log line `from`.
        func ranged(from: Int) -> Int {
            nginx.accessLog.dropFirst(from).filter { $0.hasPrefix("206 ") }.compactMap { $0.split(separator: " ").last.flatMap { Int($0) } }
                .reduce(0, +)
        }
    }

    /// nginx serving a 4 MiB file and its index, and a library.
    func setUp() async throws -> Setup? {
        let data = try await ChunkReuseTests.made.value.1
        let index = try await offThePool { try ChunkReuseTests.index(of: data) }
        guard let nginx = try await startNginx(files: ["shared.bin": data, "shared.bin.pbidx": index]) else { return nil }
        let folder = TempFolder()
        let library = try Library.open(at: folder.file("library"), transports: TransportRegistry([HTTPTransport()]),
                                       configuration: .forTests(attempts: 1))
        return Setup(nginx: nginx, folder: folder, library: library, data: data)
    }

    @Test func anAssetDeliveredInAnotherIssueIsCopiedNotFetched() async throws {
        guard let setup = try await setUp() else { return }
        defer { setup.nginx.stop() }
        let (first, _) = try await setup.deliver(to: "A", path: "mag.pdf")
        #expect(first == .delivered)
        let before = setup.nginx.accessLog.count

        let (outcome, status) = try await setup.deliver(to: "B", path: "another name.pdf")
        await setup.library.close()

        #expect(outcome == .delivered)
        #expect(setup.delivered("B", "another name.pdf") == setup.data)
        // Only the index came, nothing of the file.
        #expect(setup.ranged(from: before) == 0, "\(setup.nginx.accessLog.dropFirst(before))")
        let answers = Array(setup.nginx.accessLog.dropFirst(before))
        let index = try await offThePool { try ChunkReuseTests.index(of: setup.data) }
        #expect(answers == ["200 \"-\" \(index.count)"], "\(answers)")
        #expect(status?.bytesReused == Int64(setup.data.count), "\(String(describing: status))")
    }

    @Test func aDeliveredFileChangedSinceCostsTheChunkThatChanged() async throws {
        guard let setup = try await setUp() else { return }
        defer { setup.nginx.stop() }
        #expect(try await setup.deliver(to: "A", path: "mag.pdf").0 == .delivered)
        // The reader's copy in issue A is changed after its delivery (an app annotating it, a bad disk).
        let handle = try FileHandle(forWritingTo: setup.root.appendingPathComponent("Issues/A/mag.pdf"))
        try handle.seek(toOffset: 2_000_000)
        try handle.write(contentsOf: Data(repeating: 0xA5, count: 3))
        try handle.close()
        let before = setup.nginx.accessLog.count

        let (outcome, status) = try await setup.deliver(to: "B", path: "mag.pdf")
        await setup.library.close()

        #expect(outcome == .delivered)
        #expect(setup.delivered("B", "mag.pdf") == setup.data)
        // The changed chunk (at most a largest one), nothing else.
        let ranged = setup.ranged(from: before)
        #expect(ranged > 0 && ranged <= 128 << 10, "\(setup.nginx.accessLog.dropFirst(before))")
        #expect(status?.bytesReused == Int64(setup.data.count - ranged), "\(String(describing: status))")
    }

    @Test func aRemovedIssuesChunksAreNotUsed() async throws {
        guard let setup = try await setUp() else { return }
        defer { setup.nginx.stop() }
        #expect(try await setup.deliver(to: "A", path: "mag.pdf").0 == .delivered)
        try await setup.library.removeIssue(#require(await setup.library.issue(named: "A")))
        // The same bytes at the same place again, delivered whole (not indexed): no chunk of the
        // removed asset leads there.
        let again = try await setup.library.addIssue(name: "A", date: Date())
        let plain = try await again.addAsset(AssetRequest(url: setup.nginx.url("/shared.bin"), sha256: sha256Hex(setup.data), destinationPath: "mag.pdf"))
        try await plain.download()
        #expect(try await plain.waitUntilFinished() == .delivered)
        let before = setup.nginx.accessLog.count

        let (outcome, status) = try await setup.deliver(to: "B", path: "mag.pdf")
        await setup.library.close()

        #expect(outcome == .delivered)
        #expect(setup.delivered("B", "mag.pdf") == setup.data)
        #expect(setup.ranged(from: before) == setup.data.count, "\(setup.nginx.accessLog.dropFirst(before))")
        #expect(status?.bytesReused == 0, "\(String(describing: status))")
    }
}
