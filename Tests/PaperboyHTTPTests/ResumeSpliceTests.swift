import Foundation
import Paperboy
import PaperboyHTTP
import PaperboyTestServers
import PaperboyTesting
import Testing

/// A resume that splices two versions, caught by the catalog's SHA-256, is fetched again from 0
/// in the same run (issue 31). nginx's ETag is `"mtime-size"`: a file replaced by other bytes of
/// the same size with the same mtime (`cp -p`, `rsync -t`) keeps it, so `If-Range` lets the
/// resume continue with the new version's bytes.
@Suite("A spliced resume is fetched again from 0", .timeLimit(.minutes(2)))
struct ResumeSpliceTests {
    let folder = TempFolder()
    // More than nginx's first burst under `limit_rate` (one 2 MiB `sendfile` chunk), so that part is left.
    let size = 8 << 20

    /// Downloads part of the old version through `/slow/` and closes the library, then replaces
    /// the file by `new`, same size, same mtime. Returns nginx and the bytes kept on disk.
    func interruptedThenReplaced(old: Data, new: Data, sha256: String) async throws -> (NginxServer, String, Int64)? {
        guard let nginx = try await startNginx(files: ["file.bin": old]) else { return nil }
        // Held at 256 KiB: however late this task runs, the transfer cannot finish before the close.
        let held = HoldingTransport(base: HTTPTransport(), holdingAfter: 256 << 10)
        let library = try Library.open(at: folder.file("library"), transports: TransportRegistry([held]),
                                       configuration: .forTests(attempts: 1))
        let asset = try await library.addIssue(name: "issue", date: Date())
            .addAsset(AssetRequest(url: nginx.url("/slow/file.bin"), sha256: sha256))
        try await asset.download()
        try await eventually("256 KiB written and the transfer paused", seen: "\(held.bytesTaken) bytes, state \(asset.state)") {
            held.isHolding
        }
        await library.close()
        let kept = try #require(await Library.openForReading(at: folder.file("library")).asset(identifier: asset.identifier)).totalBytesWritten
        try #require(kept > 0 && kept < Int64(size), "\(kept) bytes kept")

        let file = nginx.documentRoot.appendingPathComponent("file.bin")
        let mtime = try #require(FileManager.default.attributesOfItem(atPath: file.path)[.modificationDate] as? Date)
        try new.write(to: file)
        try FileManager.default.setAttributes([.modificationDate: mtime], ofItemAtPath: file.path)
        return (nginx, asset.identifier, kept)
    }

    /// Reopens the library and downloads the asset again, from nginx's unthrottled path.
    func resume(_ id: String, from nginx: NginxServer) async throws -> RecordingDelegate {
        let fast = nginx.url("/file.bin")
        let delegate = RecordingDelegate(refresh: { request in
            var request = request
            request.url = fast
            return request
        })
        let library = try Library.open(at: folder.file("library"), transports: TransportRegistry([HTTPTransport()]),
                                       configuration: .forTests(attempts: 1))
        try await #require(library.asset(identifier: id)).download(delegate: delegate)
        await delegate.waitForEnd()
        await library.close()
        return delegate
    }

    @Test func aSplicedResumeIsFetchedAgainFromZeroInTheSameRun() async throws {
        let old = try await generated(size, seed: 311)
        let new = try await generated(size, seed: 312)
        guard let (nginx, id, kept) = try await interruptedThenReplaced(old: old, new: new, sha256: sha256Hex(new)) else { return }
        defer { nginx.stop() }
        let delegate = try await resume(id, from: nginx)

        #expect(delegate.deliveredSHA256 == sha256Hex(new), "\(delegate.events.suffix(3))")
        // The resume was honoured (same ETag), spliced, and fetched again whole.
        let log = nginx.accessLog
        #expect(log.dropFirst().first == "206 \"bytes=\(kept)-\" \(Int64(size) - kept)", "\(log)")
        #expect(log.dropFirst(2).first == "200 \"-\" \(size)", "\(log)")
        #expect(log.count == 3, "\(log)")
    }

    @Test func aSecondFailureFailsTheAssetAndSaysAResumeWasTried() async throws {
        let old = try await generated(size, seed: 313)
        let new = try await generated(size, seed: 314)
        let wanted = sha256Hex(Data("neither version".utf8))
        guard let (nginx, id, kept) = try await interruptedThenReplaced(old: old, new: new, sha256: wanted) else { return }
        defer { nginx.stop() }
        let delegate = try await resume(id, from: nginx)

        #expect(delegate.keptFiles.isEmpty)
        let failure = delegate.events.compactMap { event -> (String, String)? in
            if case .failed(let code, let message) = event { (code, message) } else { nil }
        }.first
        #expect(failure?.0 == LibraryError.Code.checksumMismatch.rawValue)
        let message = failure?.1 ?? ""
        #expect(message.contains("after resuming at byte \(kept)"), "\(message)")
        #expect(message.contains("fetched again from 0 and the SHA-256 is \(sha256Hex(new)), expected \(wanted)"), "\(message)")
        #expect(nginx.accessLog.count == 3, "\(nginx.accessLog)")
    }
}
