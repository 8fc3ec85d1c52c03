import Foundation
import Synchronization
import Testing
@testable import Paperboy
import PaperboyTesting

/// A transport that announces `length` bytes and sends `sent` of them.
private struct AnnouncingTransport: Transport {
    let length: Int64
    let sent: Int

    var schemes: Set<String> { ["announce"] }
    var capabilities: TransportCapabilities { [] }

    func transfer(_ job: TransferJob, into sink: any TransferSink) async throws {
        try sink.begin(TransferResponse(offset: 0, expectedLength: length, validator: nil))
        try await sink.write(Data(repeating: 7, count: sent))
    }
}

/// A resumable transport whose source sends 64 KiB, then drops the connection.
private struct DroppingTransport: Transport {
    let validator: ResourceValidator?

    var schemes: Set<String> { ["drop"] }
    var capabilities: TransportCapabilities { [.resume] }

    func transfer(_ job: TransferJob, into sink: any TransferSink) async throws {
        try sink.begin(TransferResponse(offset: 0, expectedLength: nil, validator: validator))
        try await sink.write(Data(repeating: 7, count: 64 << 10))
        throw TransportError(.connectionLost, "dropped", url: job.url)
    }
}

@Suite("Storage space", .timeLimit(.minutes(2)))
struct StorageSpaceTests {
    let folder = TempFolder()

    func failure(announcing length: Int64, sent: Int) async throws -> (state: AssetState, events: [RecordingDelegate.Event], partial: Int64?) {
        let library = try Library.open(at: folder.file("library"), transports: TransportRegistry([AnnouncingTransport(length: length, sent: sent)]),
                                       configuration: Library.Configuration.forTests(attempts: 3))
        let asset = try await library.addIssue(name: "i", date: Date()).addAsset(AssetRequest(url: URL(string: "announce://host/huge.bin")!))
        let delegate = RecordingDelegate()
        try await asset.download(delegate: delegate)
        await delegate.waitForEnd()
        let state = asset.state
        let partial = (try? FileManager.default.attributesOfItem(atPath: folder.file("library/.partial/\(asset.identifier)").path))?[.size] as? Int64
        await library.close()
        return (state, delegate.events, partial)
    }

    @Test func aFileLargerThanTheFreeSpaceFailsBeforeItsFirstByteWithoutRetries() async throws {
        // More than any test machine has free: refused by `begin`, nothing written.
        let (state, events, partial) = try await failure(announcing: 1 << 60, sent: 4096)
        guard case .failed(let message) = state else {
            Testing.Issue.record("expected a failure, got \(state)")
            return
        }
        #expect(message.contains("not enough space for announce://host/huge.bin (writing "), "\(message)")
        #expect(message.contains("MB free on the file system of"), "\(message)")
        #expect(message.contains("(min_free_space)"), "\(message)")
        #expect(!message.contains("gave up after"))
        #expect(events.compactMap { if case .failed(let code, _) = $0 { code } else { nil } } == ["insufficient-storage"])
        #expect((partial ?? 0) == 0)
    }

    /// Any transport's numbers are ``ByteCount``s at the sink: a length above 2^62 is a protocol
    /// error naming the value, not a disk too small.
    @Test(arguments: [(Int64(1) << 62) + 1, Int64.max, -1])
    func aLengthOutOfRangeIsAProtocolErrorNamingTheValue(length: Int64) async throws {
        let (state, events, partial) = try await failure(announcing: length, sent: 4096)
        guard case .failed(let message) = state else {
            Testing.Issue.record("expected a failure, got \(state)")
            return
        }
        #expect(message.contains("announced a bad begin expectedLength: expected a number of bytes (a whole number from 0 to 2^62), got \(length)"),
                "\(message)")
        #expect(events.compactMap { if case .failed(let code, _) = $0 { code } else { nil } } == ["transport"])
        #expect((partial ?? 0) == 0)
    }

    @Test func aFileThatFitsIsNotRefused() async throws {
        // The same transport with a length that fits: the check lets it through (it then fails
        // only because it sends less than announced, which is retryable).
        let (state, _, _) = try await failure(announcing: 2 << 20, sent: 4096)
        guard case .failed(let message) = state else {
            Testing.Issue.record("expected a failure, got \(state)")
            return
        }
        #expect(!message.contains("not enough space"))
        #expect(message.contains("gave up after 3 attempts"))
    }

    @Test func aFileSystemThatReportsNoSizeIsNotCheckedAtAll() throws {
        // /proc reports 0 blocks, as some FUSE and network file systems do: no free space is
        // known, so nothing is refused (a check would read "0.0 MB free" and refuse everything).
        #expect(POSIX.fileSystemSpace("/proc/self/stat") == nil)
        #expect(FreeSpaceGuard(root: URL(fileURLWithPath: "/proc/self"), floor: .percent(100)).space() == nil)
        #expect((POSIX.fileSystemSpace(folder.url.path)?.available ?? 0) > 0)
    }

    @Test func aFullFileSystemOrQuotaIsNotRetryableAndNamesTheFile() throws {
        let sink = try partialSink()
        for code in [ENOSPC, EDQUOT] {
            let error = sink.writeFailure(code)
            #expect(error.code == .insufficientStorage)
            #expect(!error.isRetryable)
            #expect(error.message.contains(sink.context.partialFile.path))
            // The library records its own code, whatever the transport makes of the error.
            #expect(sink.storageRefusal?.code == .insufficientStorage)
            #expect(sink.storageRefusal?.reason == .noSpace)
        }
        let other = sink.writeFailure(EIO)
        #expect(other.code == .ioError)
        #expect(other.isRetryable)
    }

    @Test func writersClaimEveryByteButTheFileSystemIsReadOncePerEightMegabytes() throws {
        let space = FreeSpaceGuard(root: folder.url, floor: .bytes(0))
        for _ in 0..<1024 { try space.claim(64 << 10, for: "x") }
        // 64 MiB claimed: 8 readings, plus the first.
        #expect(space.readings.load(ordering: .relaxed) <= 9, "\(space.readings.load(ordering: .relaxed)) readings")
        #expect(space.readings.load(ordering: .relaxed) >= 8)
    }

    @Test func theFloorRefusesWhatWouldGoBelowIt() throws {
        let free = try #require(FreeSpaceGuard(root: folder.url, floor: .bytes(0)).space()?.free)
        // All of the file system kept free: not one byte may be written.
        let full = FreeSpaceGuard(root: folder.url, floor: .percent(100))
        #expect(throws: LibraryError.self) { try full.claim(1, for: "one byte") }
        // A floor a gigabyte below what is free: that gigabyte fits, one more does not.
        let floor = FreeSpaceGuard(root: folder.url, floor: .bytes(max(0, free - (1 << 30))))
        try floor.check(1 << 20, for: "a megabyte")
        #expect {
            try floor.check(free, for: "all of it")
        } throws: { error in
            guard let error = error as? LibraryError else { return false }
            return error.code == .insufficientStorage && error.reason == .noSpace && !error.isRetryable
                && error.message.contains("not enough space for all of it: ") && error.message.contains("(min_free_space)")
        }
    }

    @Test(arguments: [nil, ResourceValidator("etag:\"v1\"", strength: .strong)])
    func aFailedTransfersBytesStayOnlyIfAValidatorCanResumeThem(validator: ResourceValidator?) async throws {
        let root = folder.file(validator == nil ? "unvalidated" : "validated")
        let library = try Library.open(at: root, transports: TransportRegistry([DroppingTransport(validator: validator)]),
                                       configuration: Library.Configuration.forTests(attempts: 1))
        let asset = try await library.addIssue(name: "i", date: Date()).addAsset(AssetRequest(url: URL(string: "drop://host/x.bin")!))
        let delegate = RecordingDelegate()
        try await asset.download(delegate: delegate)
        await delegate.waitForEnd()
        let partial = root.appendingPathComponent(".partial/\(asset.identifier)")
        let size = (try? FileManager.default.attributesOfItem(atPath: partial.path))?[.size] as? Int64
        #expect(asset.state.name == "failed", "\(asset.state)")
        if validator == nil {
            // Nothing could ever continue from them: removed, with the disk space they held.
            #expect(size == nil, "a partial of \(size ?? 0) bytes without a validator was kept")
            #expect(asset.bytesOnDisk == 0)
        } else {
            #expect(size == 64 << 10, "the resumable bytes were not kept")
        }
        await library.close()
    }

    /// A sink outside any library, for its error mapping (it writes nothing).
    func partialSink() throws -> PartialFileSink {
        let store = try LibraryStore(fileURL: folder.file("scratch.sqlite"))
        let context = PartialFileSink.Context(
            assetID: "a", partialFile: folder.file("scratch"), url: URL(string: "announce://host/x")!, requestedOffset: 0, recordedValidator: nil,
            expectedSHA256: nil, progressInterval: .seconds(1), checkpointInterval: .seconds(1), store: store,
            durability: Durability(root: folder.url, enabled: false), space: FreeSpaceGuard(root: folder.url, floor: .default),
            live: LiveProgress(), hub: { nil }, limiters: [],
            answerChallenge: { _ in .performDefaultHandling })
        return PartialFileSink(fd: -1, context: context)
    }
}
