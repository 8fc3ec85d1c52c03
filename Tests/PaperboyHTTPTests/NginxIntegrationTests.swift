import Foundation
import Paperboy
import PaperboyHTTP
import PaperboyTestServers
import PaperboyTesting
import Testing

/// Against a real nginx started by the test. Under `CI=true` a missing nginx is a failure.
@Suite("nginx integration", .timeLimit(.minutes(3)))
struct NginxIntegrationTests {
    /// The test file, made once on a thread of its own: megabytes take a debug build tens of
    /// milliseconds, too long for the cooperative pool (and made by every test at once, even
    /// for a thread each).
    static let made = Task { try await offThePool { randomData(8 << 20 + 123) } }
    static func makeData() async throws -> Data { try await made.value }

    /// Starts nginx serving `data` as `/file.bin`, or returns nil (skipping) when it is not installed.
    func startNginx(tls: (certificate: URL, key: URL)? = nil) async throws -> NginxServer? {
        let data = try await Self.makeData()
        return try await PaperboyHTTPTests.startNginx(files: ["file.bin": data], slowRate: "4m", tls: tls)
    }

    @Test func downloadsAFileWithTheLibrary() async throws {
        let data = try await Self.makeData()
        guard let nginx = try await startNginx() else { return }
        defer { nginx.stop() }
        let folder = TempFolder()
        let delegate = try await downloadThroughLibrary(nginx.url("/file.bin"), in: folder, sha256: sha256Hex(data))
        #expect(delegate.deliveredSHA256 == sha256Hex(data))
    }

    @Test func reportsNginxsStrongETagAndLength() async throws {
        let data = try await Self.makeData()
        guard let nginx = try await startNginx() else { return }
        defer { nginx.stop() }
        let sink = RecordingSink()
        try await HTTPTransport().transfer(.forTests(nginx.url("/file.bin")), into: sink)
        let response = try #require(sink.response)
        #expect(response.expectedLength == Int64(data.count))
        #expect(response.validator?.strength == .strong)
        #expect(response.validator?.value.hasPrefix("etag:\"") == true)
        #expect(sha256Hex(sink.data) == sha256Hex(data))
    }

    @Test func resumesAfterTheLibraryIsClosedMidTransfer() async throws {
        let data = try await Self.makeData()
        guard let nginx = try await startNginx() else { return }
        defer { nginx.stop() }
        let folder = TempFolder()
        let url = nginx.url("/slow/file.bin")
        let configuration = Library.Configuration.forTests(attempts: 1)

        // Held at 1 MiB: however late this task runs, the transfer cannot finish before the close.
        let held = HoldingTransport(base: HTTPTransport(), holdingAfter: 1 << 20)
        var library = try Library.open(at: folder.file("library"), transports: TransportRegistry([held]), configuration: configuration)
        let asset = try await library.addIssue(name: "issue", date: Date()).addAsset(AssetRequest(url: url, sha256: sha256Hex(data)))
        try await asset.download()
        try await eventually("1 MiB written and the transfer paused", seen: "\(held.bytesTaken) bytes, state \(asset.state)") {
            held.isHolding
        }
        #expect(held.bytesTaken >= 1 << 20 && held.bytesTaken < data.count)
        await library.close()
        let kept = try #require(await Library.openForReading(at: folder.file("library")).asset(identifier: asset.identifier)).totalBytesWritten
        #expect(kept >= 1 << 20)
        #expect(kept < Int64(data.count))

        library = try Library.open(at: folder.file("library"), transports: TransportRegistry([HTTPTransport()]), configuration: configuration)
        let delegate = RecordingDelegate()
        try await #require(library.asset(identifier: asset.identifier)).download(delegate: delegate)
        await delegate.waitForEnd()
        await library.close()

        #expect(delegate.deliveredSHA256 == sha256Hex(data))
        #expect(delegate.events.contains { if case .resumed(let total, let expected) = $0 { total > 0 && expected == Int64(data.count) } else { false } })
        #expect(nginx.accessLog.contains { $0.hasPrefix("206 \"bytes=") })
    }

    @Test func resumesAfterATaskIsCancelledMidTransfer() async throws {
        let data = try await Self.makeData()
        guard let nginx = try await startNginx() else { return }
        defer { nginx.stop() }
        let url = nginx.url("/slow/file.bin")
        // Held full at 1 MiB: however late this task runs, the transfer cannot finish first.
        let first = HoldingSink(holdingAfter: 1 << 20)
        let task = Task { try await HTTPTransport().transfer(.forTests(url), into: first) }
        try await eventually("1 MiB received and the transfer paused", seen: "\(first.data.count) bytes") { first.isHolding }
        task.cancel()
        await #expect(throws: CancellationError.self) { try await task.value }
        let prefix = first.data
        #expect(prefix.count >= 1 << 20 && prefix.count < data.count)

        let second = RecordingSink(startOffset: Int64(prefix.count))
        try await HTTPTransport().transfer(.forTests(url, offset: Int64(prefix.count), validator: first.response?.validator), into: second)
        #expect(second.response?.offset == Int64(prefix.count))
        #expect(sha256Hex(prefix + second.data) == sha256Hex(data))
        #expect(nginx.accessLog.contains("206 \"bytes=\(prefix.count)-\" \(data.count - prefix.count)"))
    }

    @Test func finishesWithA416WhenEverythingIsOnDisk() async throws {
        let data = try await Self.makeData()
        guard let nginx = try await startNginx() else { return }
        defer { nginx.stop() }
        let head = RecordingSink()
        try await HTTPTransport().transfer(.forTests(nginx.url("/file.bin")), into: head)
        let sink = RecordingSink(startOffset: Int64(data.count))
        try await HTTPTransport().transfer(.forTests(nginx.url("/file.bin"), offset: Int64(data.count), validator: head.response?.validator), into: sink)
        #expect(sink.response?.offset == Int64(data.count))
        #expect(sink.response?.expectedLength == Int64(data.count))
        #expect(sink.data.isEmpty)
    }

    @Test func verifiesTLSAndTrustsAConfiguredCAFile() async throws {
        let data = try await Self.makeData()
        let folder = TempFolder()
        guard let (certificate, key) = try await makeCertificate(in: folder),
              let nginx = try await startNginx(tls: (certificate, key)), let url = nginx.tlsURL("/file.bin") else { return }
        defer { nginx.stop() }

        let refused = await transportError { try await HTTPTransport().transfer(.forTests(url), into: RecordingSink()) }
        #expect(refused?.code == .untrustedServer)
        #expect(refused?.isRetryable == false)

        let sink = RecordingSink()
        try await HTTPTransport(caFile: certificate.path).transfer(.forTests(url), into: sink)
        #expect(sha256Hex(sink.data) == sha256Hex(data))

        var withOption = TransferJob.forTests(url)
        withOption.options = ["ca_file": certificate.path]
        let other = RecordingSink()
        try await HTTPTransport().transfer(withOption, into: other)
        #expect(other.data.count == data.count)
    }

    @Test func refusesARedirectFromHTTPSToPlainHTTP() async throws {
        let data = try await Self.makeData()
        let folder = TempFolder()
        guard let (certificate, key) = try await makeCertificate(in: folder),
              let nginx = try await startNginx(tls: (certificate, key)), let from = nginx.tlsURL("/to-http/file.bin") else { return }
        defer { nginx.stop() }
        let transport = HTTPTransport(caFile: certificate.path)

        // Straight from https, and from http by way of https: both leave https for http.
        for start in [from, nginx.url("/to-https/to-http/file.bin")] {
            let sink = RecordingSink()
            let refused = await transportError { try await transport.transfer(.forTests(start), into: sink) }
            #expect(refused?.code == .insecureRedirect, "\(start): \(String(describing: refused))")
            #expect(refused?.isRetryable == false)
            #expect(refused?.message.contains(from.absoluteString) == true, "\(refused?.message ?? "")")
            #expect(refused?.message.contains(nginx.url("/file.bin").absoluteString) == true, "\(refused?.message ?? "")")
            #expect(sink.data.isEmpty)
        }
        #expect(!nginx.accessLog.contains { $0.hasPrefix("200 ") }, "the file went out over plain http: \(nginx.accessLog)")

        let allowed = RecordingSink()
        try await HTTPTransport(configuration: .init(caFile: certificate.path, allowsInsecureRedirects: true))
            .transfer(.forTests(from), into: allowed)
        #expect(allowed.data.count == data.count)
    }

    @Test func followsARedirectFromHTTPToHTTPS() async throws {
        let data = try await Self.makeData()
        let folder = TempFolder()
        guard let (certificate, key) = try await makeCertificate(in: folder),
              let nginx = try await startNginx(tls: (certificate, key)) else { return }
        defer { nginx.stop() }
        let sink = RecordingSink()
        try await HTTPTransport(caFile: certificate.path).transfer(.forTests(nginx.url("/to-https/file.bin")), into: sink)
        #expect(sha256Hex(sink.data) == sha256Hex(data))
    }
}
