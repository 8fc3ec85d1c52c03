import Foundation
import GRDB
import PaperboyTestServers
import PaperboyTesting
import Testing
@testable import Paperboy

/// A validator is committed to the database before any byte it covers reaches the partial file:
/// a kill at the first byte written leaves bytes that the next run continues from, not bytes
/// fetched again from 0 (issue 31, against caddy: up to 18 MB in the first 60 ms).
///
/// The store's batches wait an hour here, so the database holds only what the library commits
/// on purpose: what a kill at this instant would leave. No test waits for a time.
@Suite("A validator is recorded before the bytes it covers", .timeLimit(.minutes(2)))
struct ValidatorFirstTests {
    let folder = TempFolder()

    func configuration() -> Library.Configuration {
        var configuration = Library.Configuration.forTests()
        configuration.bootIdentity = { "boot-a" }
        configuration.storeBatchDelay = .seconds(3600)
        return configuration
    }

    struct Committed: Sendable {
        var validator: String?
        var expectedBytes: Int64?
        var checkpointBoot: String?
    }

    /// The asset's row as committed (read through the pool, never the store's queued updates).
    static func committed(_ store: LibraryStore, _ id: String) throws -> Committed? {
        try store.pool.read { db in
            try Row.fetchOne(db, sql: "SELECT validator, expectedBytes, checkpointBoot FROM asset WHERE id = ?", arguments: [id])
        }.map { Committed(validator: $0["validator"], expectedBytes: $0["expectedBytes"], checkpointBoot: $0["checkpointBoot"]) }
    }

    static func fileSize(_ url: URL) -> Int {
        ((try? FileManager.default.attributesOfItem(atPath: url.path))?[.size] as? NSNumber)?.intValue ?? 0
    }

    @Test func aKillAtTheFirstByteWrittenResumesFromThePartialFilesLength() async throws {
        let data = try await generated(1 << 20, seed: 31)
        let transport = InMemoryTransport()
        // 64 KiB, then nothing until cancelled: the body is larger than a gathered one, so its
        // bytes go straight to the partial file.
        let url = transport.serve(data, at: "big", script: [.stallAfter(64 << 10)])
        let root = folder.file("library")
        let library = try Library.open(at: root, transports: TransportRegistry([transport]), configuration: configuration())
        let asset = try await library.addIssue(name: "i", date: Date()).addAsset(AssetRequest(url: url))
        try await asset.download()
        let partial = LibraryLayout(root: root).partialURL(asset: asset.identifier)
        try await eventually("64 KiB in the partial file", seen: "\(Self.fileSize(partial)) bytes") { Self.fileSize(partial) == 64 << 10 }

        let row = try Self.committed(library.scheduler.store, asset.identifier)
        #expect(row?.validator != nil, "64 KiB on disk, no validator committed")
        #expect(row?.expectedBytes == Int64(data.count))
        #expect(row?.checkpointBoot == "boot-a")

        // What SIGKILL leaves now: the committed database (no shared-memory index) and the file.
        let killed = folder.file("killed")
        try FileManager.default.copyItem(at: root, to: killed)
        try? FileManager.default.removeItem(atPath: LibraryLayout(root: killed).database.path + "-shm")
        await library.close()

        let relaunched = InMemoryTransport()
        #expect(relaunched.serve(data, at: "big") == url)
        let reopened = try Library.open(at: killed, transports: TransportRegistry([relaunched]), configuration: configuration())
        let delegate = RecordingDelegate()
        try await #require(try await reopened.asset(identifier: asset.identifier)).download(delegate: delegate)
        await delegate.waitForEnd()
        await reopened.close()
        #expect(relaunched.jobs.first?.offset == Int64(64 << 10), "continued at \(relaunched.jobs.map(\.offset)), 65536 bytes were on disk")
        #expect(delegate.keptFiles.map(sha256Hex) == [sha256Hex(data)])
    }
}
