import Foundation
import Paperboy
import PaperboyHTTP
import PaperboyTestServers
import PaperboyTesting
import Testing

/// The resume cases against a real lighttpd started by the test: a second kind of server besides
/// nginx (its ETags, its 206s, its 403). Under `CI=true` a missing lighttpd is a failure.
@Suite("lighttpd integration", .timeLimit(.minutes(3)))
struct LighttpdIntegrationTests {
    /// The test file, made once on a thread of its own (see ``NginxIntegrationTests/made``).
    static let made = Task { try await offThePool { randomData(8 << 20 + 321, seed: 31) } }
    static func makeData() async throws -> Data { try await made.value }

    /// lighttpd serving `data` as `/file.bin` (and `/slow/file.bin` at 2 MiB/s).
    func startLighttpd(_ data: Data) async throws -> LighttpdServer? {
        try await PaperboyHTTPTests.startLighttpd(files: ["file.bin": data], slowKilobytesPerSecond: 2048)
    }

    func openLibrary(in folder: TempFolder, transport: any Transport = HTTPTransport()) throws -> Library {
        try Library.open(at: folder.file("library"), transports: TransportRegistry([transport]),
                         configuration: .forTests(attempts: 1))
    }

    /// Starts downloading `url` into a library in `folder` and closes the library once the
    /// transfer is held with 1 MiB written (however late this task runs, it cannot finish
    /// first); returns the asset and the bytes the library kept.
    func interruptedDownload(of url: URL, sha256: String?, in folder: TempFolder) async throws -> (id: String, kept: Int64) {
        let held = HoldingTransport(base: HTTPTransport(), holdingAfter: 1 << 20)
        let library = try openLibrary(in: folder, transport: held)
        let asset = try await library.addIssue(name: "issue", date: Date()).addAsset(AssetRequest(url: url, sha256: sha256))
        try await asset.download()
        try await eventually("1 MiB written and the transfer paused", seen: "\(held.bytesTaken) bytes, state \(asset.state)") {
            held.isHolding
        }
        await library.close()
        let kept = try #require(await Library.openForReading(at: folder.file("library")).asset(identifier: asset.identifier)).totalBytesWritten
        return (asset.identifier, kept)
    }

    /// Downloads asset `id` of the library in `folder` again, to its end.
    func resume(_ id: String, in folder: TempFolder) async throws -> RecordingDelegate {
        let library = try openLibrary(in: folder)
        let delegate = RecordingDelegate()
        try await #require(library.asset(identifier: id)).download(delegate: delegate)
        await delegate.waitForEnd()
        await library.close()
        return delegate
    }

    @Test func resumesAnInterruptedTransferWithA206AtThePartialsLength() async throws {
        let data = try await Self.makeData()
        guard let lighttpd = try await startLighttpd(data) else { return }
        defer { lighttpd.stop() }
        let folder = TempFolder()
        let (id, kept) = try await interruptedDownload(of: lighttpd.url("/slow/file.bin"), sha256: sha256Hex(data), in: folder)
        #expect(kept >= 1 << 20 && kept < Int64(data.count), "kept \(kept) of \(data.count) bytes")

        let delegate = try await resume(id, in: folder)
        #expect(delegate.deliveredSHA256 == sha256Hex(data), "\(delegate.events.suffix(3))")
        #expect(delegate.events.contains { if case .resumed(let total, let expected) = $0 { total == kept && expected == Int64(data.count) } else { false } },
                "no resume from \(kept): \(delegate.events.filter { if case .progress = $0 { false } else { true } })")
        // lighttpd writes its log line through a pipe: it may land just after the transfer ends.
        let line = "206 \"bytes=\(kept)-\" \(Int64(data.count) - kept)"
        try await eventually("lighttpd logged \(line)", seen: "\(lighttpd.accessLog)") { lighttpd.accessLog.contains(line) }
    }

    @Test func aChangedFileRestartsFromZero() async throws {
        let data = try await Self.makeData()
        guard let lighttpd = try await startLighttpd(data) else { return }
        defer { lighttpd.stop() }
        let folder = TempFolder()
        let replacement = randomData(data.count - 1000, seed: 32)
        // No sha256: the asset is whatever the URL serves, the new version too.
        let (id, kept) = try await interruptedDownload(of: lighttpd.url("/slow/file.bin"), sha256: nil, in: folder)
        #expect(kept >= 1 << 20 && kept < Int64(data.count))

        // Another version: other bytes, size and modification time, so another ETag.
        let file = lighttpd.documentRoot.appendingPathComponent("file.bin")
        try replacement.write(to: file)
        try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSince1970: 1_600_000_000)], ofItemAtPath: file.path)
        let delegate = try await resume(id, in: folder)

        #expect(delegate.deliveredSHA256 == sha256Hex(replacement), "\(delegate.events.suffix(3))")
        #expect(!delegate.events.contains { if case .resumed = $0 { true } else { false } })
        // Asked from the kept byte with If-Range; lighttpd answered with the whole new version.
        let line = "200 \"bytes=\(kept)-\" \(replacement.count)"
        try await eventually("lighttpd logged \(line)", seen: "\(lighttpd.accessLog)") { lighttpd.accessLog.contains(line) }
    }

    /// lighttpd does not unblock SIGTERM itself: started with the test thread's mask (the
    /// concurrency runtime blocks SIGTERM), it outlived every test. It must exit: a hang fails
    /// the test at its time limit.
    @Test(.timeLimit(.minutes(2))) func stopsOnSIGTERM() async throws {
        guard let lighttpd = try await startLighttpd(Data()) else { return }
        lighttpd.stop()
        await lighttpd.exited()
    }

    @Test func aMissingFileIsOneNotFoundError() async throws {
        let data = try await Self.makeData()
        guard let lighttpd = try await startLighttpd(data) else { return }
        defer { lighttpd.stop() }
        let url = lighttpd.url("/missing.bin")
        let delegate = try await downloadThroughLibrary(url, in: TempFolder())
        let failures = delegate.events.compactMap { if case .failed(let code, let message) = $0 { (code, message) } else { nil } }
        #expect(failures.count == 1)
        #expect(failures.first?.1.hasSuffix("(not-found)") == true, "\(failures)")
        #expect(failures.first?.1.contains("HTTP 404 Not Found from \(url.absoluteString)") == true, "\(failures)")
        #expect(delegate.keptFiles.isEmpty)
    }

    @Test func aForbiddenFileIsOneAccessDeniedError() async throws {
        let data = try await Self.makeData()
        guard let lighttpd = try await startLighttpd(data) else { return }
        defer { lighttpd.stop() }
        try lighttpd.publish(Data("not for you".utf8), at: "plans.secret")
        let url = lighttpd.url("/plans.secret")
        let delegate = try await downloadThroughLibrary(url, in: TempFolder())
        let failures = delegate.events.compactMap { if case .failed(let code, let message) = $0 { (code, message) } else { nil } }
        #expect(failures.count == 1)
        #expect(failures.first?.1.hasSuffix("(access-denied)") == true, "\(failures)")
        #expect(failures.first?.1.contains("HTTP 403 Forbidden from \(url.absoluteString)") == true, "\(failures)")
        #expect(delegate.keptFiles.isEmpty)
    }
}
