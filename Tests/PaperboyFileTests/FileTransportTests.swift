import Foundation
import Paperboy
import PaperboyFile
import PaperboyTestServers
import PaperboyTesting
import Testing

@Suite("FileTransport", .timeLimit(.minutes(2)))
struct FileTransportTests {
    let folder: URL = {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("paperboy-file-\(UUID().uuidString)")
        try! FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }()

    func source(_ bytes: Int, name: String = "source.bin") throws -> (URL, Data) {
        let data = randomData(bytes, seed: UInt64(bytes))
        let url = folder.appendingPathComponent(name)
        try data.write(to: url)
        return (url, data)
    }

    @Test func copiesTheWholeFile() async throws {
        let (url, data) = try source(3 << 20)
        let sink = RecordingSink()
        try await FileTransport(chunkSize: 1 << 20).transfer(TransferJob(url: url), into: sink)
        #expect(sink.beginCount == 1)
        #expect(sink.response?.offset == 0)
        #expect(sink.response?.expectedLength == Int64(data.count))
        #expect(sink.response?.validator?.strength == .strong)
        #expect(Bytes(sink.data) == Bytes(data))
        #expect(sink.writeCount == 3)
    }

    @Test func resumesFromAnOffsetWhenTheValidatorMatches() async throws {
        let (url, data) = try source(100_000)
        let probe = RecordingSink()
        try await FileTransport().transfer(TransferJob(url: url), into: probe)
        let validator = try #require(probe.response?.validator)
        let sink = RecordingSink()
        try await FileTransport().transfer(TransferJob(url: url, offset: 40_000, validator: validator), into: sink)
        #expect(sink.response?.offset == 40_000)
        #expect(Bytes(sink.data) == Bytes(data[40_000...]))
    }

    @Test func aChangedFileRestartsFromZero() async throws {
        let (url, _) = try source(100_000)
        let probe = RecordingSink()
        try await FileTransport().transfer(TransferJob(url: url), into: probe)
        let old = try #require(probe.response?.validator)
        let (_, newer) = try source(120_000)   // rewritten: a new size, whatever the clock's resolution
        let sink = RecordingSink()
        try await FileTransport().transfer(TransferJob(url: url, offset: 40_000, validator: old), into: sink)
        #expect(sink.response?.offset == 0)
        #expect(sink.response?.validator != old)
        #expect(Bytes(sink.data) == Bytes(newer))
    }

    @Test func anOffsetPastTheEndRestartsFromZero() async throws {
        let (url, data) = try source(1000)
        let sink = RecordingSink()
        try await FileTransport().transfer(TransferJob(url: url, offset: 5000), into: sink)
        #expect(sink.response?.offset == 0)
        #expect(Bytes(sink.data) == Bytes(data))
    }

    @Test func missingFilesAndFoldersAreFatalNotFound() async throws {
        for url in [folder.appendingPathComponent("missing.bin"), folder] {
            do {
                try await FileTransport().transfer(TransferJob(url: url), into: RecordingSink())
                Issue.record("expected an error for \(url.path)")
            } catch let error as TransportError {
                #expect(error.code == .notFound)
                #expect(!error.isRetryable)
                #expect(error.message.contains(url.path))
            }
        }
    }

    @Test func cancellationStopsPromptly() async throws {
        let (url, _) = try source(8 << 20)
        // Held after two chunks until the test has cancelled: the transfer cannot end first.
        let sink = HoldingSink(holdingAfter: 2 * 64 * 1024)
        defer { sink.release() }
        let task = Task { try await FileTransport(chunkSize: 64 * 1024).transfer(TransferJob(url: url), into: sink) }
        try await eventually("the sink to hold two chunks", seen: "\(sink.data.count) bytes") { sink.isHolding }
        task.cancel()
        let result = await task.result
        #expect(throws: CancellationError.self) { try result.get() }
        #expect(sink.data.count == 2 * 64 * 1024)
    }

    @Test func plainPathsBecomeFileURLs() throws {
        let base = URL(fileURLWithPath: "/srv/publisher", isDirectory: true)
        #expect(try TransportRegistry.url(from: "content/a.pdf", relativeTo: base).path == "/srv/publisher/content/a.pdf")
        #expect(try TransportRegistry.url(from: "/abs/b.pdf").path == "/abs/b.pdf")
        #expect(try TransportRegistry.url(from: "file:///abs/c.pdf").path == "/abs/c.pdf")
        #expect(try TransportRegistry.url(from: "https://cdn.example.com/x.zip").host == "cdn.example.com")
        for bad in ["", "https://exa mple.com/x", "https:///nohost", "ht tp://bad url", "://host/x", "h_ttps://host/x"] {
            #expect(throws: TransportError.self, "\(bad)") { try TransportRegistry.url(from: bad) }
        }
        // A refused URL's message never shows its password.
        for bad in ["https://reader:s3cret-pw@exa mple.com/x", "https://reader:s3cret-pw@[bad", "h ttps://reader:s3cret-pw@host/x"] {
            let error = try #require(throws: TransportError.self) { try TransportRegistry.url(from: bad) }
            #expect(!error.message.contains("s3cret-pw"), "\(error.message)")
        }
        let spaced = try #require(throws: TransportError.self) { try TransportRegistry.url(from: "https://exa mple.com/x") }
        #expect(spaced.message.contains("contains a space"))
    }

    @Test func throughTheLibraryTheFileLandsInTheIssueFolder() async throws {
        let (url, data) = try source(2 << 20)
        let library = try Library.open(at: folder.appendingPathComponent("lib"), transports: TransportRegistry([FileTransport()]))
        let issue = try await library.addIssue(name: "i", date: Date())
        let asset = try await issue.addAsset(AssetRequest(url: url, sha256: sha256Hex(data), destinationPath: "sub/out.bin"))
        try await asset.download()
        await library.waitUntilIdle()
        #expect(asset.state == .delivered)
        #expect(try Bytes(Data(contentsOf: issue.contentURL.appendingPathComponent("sub/out.bin"))) == Bytes(data))
        await library.close()
    }

    @Test func throughTheLibraryAMissingFileIsNotFoundAndLeavesNothing() async throws {
        let root = folder.appendingPathComponent("lib")
        let library = try Library.open(at: root, transports: TransportRegistry([FileTransport()]))
        let asset = try await library.addIssue(name: "i", date: Date()).addAsset(AssetRequest(url: folder.appendingPathComponent("gone.pdf")))
        var last: DownloadEvent?
        for await event in try await asset.events() { last = event }
        guard case .failed(let error) = last else {
            Testing.Issue.record("expected a failure, got \(String(describing: last))")
            return
        }
        #expect(error.reason == .notFound)
        #expect(error.message.contains("gone.pdf"))
        await library.waitUntilIdle()
        #expect(!FileManager.default.fileExists(atPath: root.appendingPathComponent(".partial/\(asset.identifier)").path))
        #expect(asset.bytesOnDisk == 0)
        await library.close()
    }
}
