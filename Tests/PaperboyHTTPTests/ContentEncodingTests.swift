import Foundation
import Paperboy
import PaperboyHTTP
import PaperboyTestServers
import PaperboyTesting
import Testing

/// Issue 31, case 1: a body the server encoded although Paperboy asked for `identity` is refused
/// on its head (`content-encoding-not-identity`), never stored as the file nor resumed.
@Suite("Content-Encoding is never the file", .timeLimit(.minutes(3)))
struct ContentEncodingTests {
    static let made = Task { try await offThePool { randomData(3 << 20 + 77, seed: 41) } }
    static func makeData() async throws -> Data { try await made.value }

    /// Checks a refusal: its code, that it is final, and that it names the URL, the encoding and
    /// the fix.
    func expectRefusal(_ error: TransportError?, url: URL, encoding: String = "gzip", sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(error?.code == .contentEncodingNotIdentity, "\(String(describing: error))", sourceLocation: sourceLocation)
        #expect(error?.isRetryable == false, sourceLocation: sourceLocation)
        let message = error?.message ?? ""
        #expect(message.contains(url.absoluteString), "\(message)", sourceLocation: sourceLocation)
        #expect(message.contains("Content-Encoding: \(encoding)"), "\(message)", sourceLocation: sourceLocation)
        #expect(message.contains("make the server send this file unencoded"), "\(message)", sourceLocation: sourceLocation)
        #expect(!message.contains("\n"), sourceLocation: sourceLocation)
    }

    /// Fetches `url` with the transport: refused before `begin`, no byte taken.
    func expectRefusedBeforeAnyByte(_ url: URL, sourceLocation: SourceLocation = #_sourceLocation) async {
        let sink = RecordingSink()
        let refused = await transportError { try await HTTPTransport().transfer(.forTests(url), into: sink) }
        expectRefusal(refused, url: url, sourceLocation: sourceLocation)
        #expect(sink.response == nil, "begin was called: \(String(describing: sink.response))", sourceLocation: sourceLocation)
        #expect(sink.data.isEmpty, sourceLocation: sourceLocation)
    }

    /// Downloads `url` through a library allowed three attempts: it fails with the refusal,
    /// delivers nothing and keeps no partial file.
    func expectLibraryRefuses(_ url: URL, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let folder = TempFolder()
        let delegate = try await downloadThroughLibrary(url, in: folder, configuration: .forTests(attempts: 3))
        #expect(delegate.failureMessage?.hasSuffix("(content-encoding-not-identity)") == true, "\(delegate.events.suffix(3))",
                sourceLocation: sourceLocation)
        #expect(delegate.keptFiles.isEmpty, "delivered \(delegate.keptFiles.map(\.count)) bytes", sourceLocation: sourceLocation)
        let partials = (try? FileManager.default.contentsOfDirectory(atPath: folder.file("library/.partial").path)) ?? []
        #expect(partials.isEmpty, "a partial survived: \(partials)", sourceLocation: sourceLocation)
    }

    @Test func nginxsGzipStaticAlwaysIsRefusedAndNotKept() async throws {
        let data = try await Self.makeData()
        guard let nginx = try await startNginx(files: [:]) else { return }
        defer { nginx.stop() }
        try nginx.publishGzipped(data, at: "file.bin")
        let url = nginx.url("/forced-gzip/file.bin")
        await expectRefusedBeforeAnyByte(url)
        try await expectLibraryRefuses(url)
        // Not retried (two requests: the transport's and the library's one attempt).
        try await eventually("nginx logged both requests", seen: "\(nginx.accessLog)") { nginx.accessLog.count >= 2 }
        #expect(nginx.accessLog.count == 2, "\(nginx.accessLog)")
    }

    @Test func lighttpdsForcedDeflateIsRefusedAndNotKept() async throws {
        let data = try await Self.makeData()
        guard let lighttpd = try await startLighttpd(files: ["file.bin": data]) else { return }
        defer { lighttpd.stop() }
        let url = lighttpd.url("/forced-gzip/file.bin")
        await expectRefusedBeforeAnyByte(url)
        try await expectLibraryRefuses(url)
    }

    // MARK: The rule, header by header

    @Test(arguments: [
        ("gzip", "gzip"), ("x-gzip", "x-gzip"), ("br", "br"), ("GZIP", "GZIP"), ("identity, gzip", "gzip"),
        ("deflate ,  identity", "deflate"), ("gzip\u{1B}[31m", "gzip\\u{1B}[31m"),
    ])
    func everyCodingButIdentityIsRefused(value: String, shown: String) async throws {
        let data = try await Self.makeData()
        let server = try FaultServer { _ in ServerResponse(status: 200, headers: [("Content-Encoding", value)], body: data) }
        defer { server.stop() }
        let sink = RecordingSink()
        let refused = await transportError { try await HTTPTransport().transfer(.forTests(server.url("/f")), into: sink) }
        expectRefusal(refused, url: server.url("/f"), encoding: shown)
        #expect(sink.response == nil)
    }

    /// A 206 of an encoded body, to a resume guarded by its own ETag (the issue's apache resumed
    /// with `If-Range: "…-gzip"`), is refused too: its offsets count compressed bytes.
    @Test func anEncodedPartialResponseIsNotResumedFrom() async throws {
        let data = try await Self.makeData()
        let server = try FaultServer { request in
            var response = ServerResponse.serving(data, for: request, etag: "\"v1-gzip\"")
            response.headers.append(("Content-Encoding", "gzip"))
            return response
        }
        defer { server.stop() }
        let sink = RecordingSink(startOffset: 1000)
        let job = TransferJob.forTests(server.url("/f"), offset: 1000, validator: ResourceValidator("etag:\"v1-gzip\"", strength: .strong))
        let refused = await transportError { try await HTTPTransport().transfer(job, into: sink) }
        expectRefusal(refused, url: server.url("/f"))
        #expect(server.requests.first?.header("if-range") == "\"v1-gzip\"")
        #expect(sink.response == nil)
        #expect(sink.data.isEmpty)
    }

    @Test func aCodingInASecondFieldIsRefused() async throws {
        let server = try FaultServer { _ in
            ServerResponse(status: 200, headers: [("Content-Encoding", "identity"), ("Content-Encoding", "gzip")], body: Data(count: 100))
        }
        defer { server.stop() }
        await expectRefusedBeforeAnyByte(server.url("/f"))
    }

    @Test(arguments: ["identity", "IDENTITY", "", " identity , identity "])
    func identityIsTheFile(value: String) async throws {
        let data = try await Self.makeData()
        let server = try FaultServer { request in
            var response = ServerResponse.serving(data, for: request)
            response.headers.append(("Content-Encoding", value))
            return response
        }
        defer { server.stop() }
        let sink = RecordingSink()
        try await HTTPTransport().transfer(.forTests(server.url("/f")), into: sink)
        #expect(sha256Hex(sink.data) == sha256Hex(data))
    }

    /// An error page may be compressed: the status decides, as for any failure.
    @Test func aCompressedErrorIsStillTheError() async throws {
        let server = try FaultServer { _ in ServerResponse(status: 404, headers: [("Content-Encoding", "gzip")], body: Data(count: 20)) }
        defer { server.stop() }
        let error = await transportError { try await HTTPTransport().transfer(.forTests(server.url("/f")), into: RecordingSink()) }
        #expect(error?.code == .notFound, "\(String(describing: error))")
    }

    /// After a redirect, the refusal names the server that encoded the body.
    @Test func theRefusalNamesTheURLThatAnswered() async throws {
        let target = try FaultServer { _ in ServerResponse(status: 200, headers: [("Content-Encoding", "gzip")], body: Data(count: 100)) }
        defer { target.stop() }
        let origin = try FaultServer { _ in .redirect(to: target.url("/cdn/f").absoluteString) }
        defer { origin.stop() }
        let refused = await transportError { try await HTTPTransport().transfer(.forTests(origin.url("/f")), into: RecordingSink()) }
        expectRefusal(refused, url: target.url("/cdn/f"))
    }

    /// Catalogs follow the same rule: fetched whole, they could be decoded, but one rule covers
    /// every body the transport fetches, and the message says what to change.
    @Test func aGzipEncodedCatalogIsRefusedToo() async throws {
        let server = try FaultServer { _ in
            ServerResponse(status: 200, headers: [("Content-Encoding", "gzip"), ("Content-Type", "application/json")], body: Data(count: 40))
        }
        defer { server.stop() }
        let url = server.url("/catalog.json")
        do {
            _ = try await Library.fetchData(from: url, transports: TransportRegistry([HTTPTransport()]), configuration: .forTests(attempts: 3))
            Testing.Issue.record("a gzip-encoded catalog was read")
        } catch {
            expectRefusal(error.transportError, url: url)
            #expect(server.requests.count == 1, "retried \(server.requests.count - 1) times")
        }
    }
}
