import Foundation
import Paperboy
import PaperboyHTTP
import PaperboyTestServers
import PaperboyTesting
import Testing

@Suite("HTTPTransport", .timeLimit(.minutes(2)))
struct HTTPTransportTests {
    /// The test file, made once on a thread of its own: megabytes take a debug build tens of
    /// milliseconds, too long for the cooperative pool (and made by every test at once, even
    /// for a thread each).
    static let made = Task { try await offThePool { randomData(3 << 20 + 17) } }
    static func makeData() async throws -> Data { try await made.value }

    @Test func downloadsAWholeFileAndReportsLengthAndStrongValidator() async throws {
        let data = try await Self.makeData()
        let server = try FaultServer { .serving(data, for: $0) }
        let sink = RecordingSink()
        try await HTTPTransport().transfer(.forTests(server.url("/file.bin")), into: sink)
        #expect(sink.beginCount == 1)
        #expect(sink.response == TransferResponse(offset: 0, expectedLength: Int64(data.count), validator: ResourceValidator("etag:\"v1\"", strength: .strong)))
        #expect(sha256Hex(sink.data) == sha256Hex(data))
        #expect(server.requests.first?.header("accept-encoding") == "identity")
        #expect(server.requests.first?.header("range") == nil)
    }

    @Test func downloadsThroughTheLibrary() async throws {
        let data = try await Self.makeData()
        let server = try FaultServer { .serving(data, for: $0) }
        let folder = TempFolder()
        let delegate = try await downloadThroughLibrary(server.url("/file.bin"), in: folder, sha256: sha256Hex(data))
        #expect(delegate.deliveredSHA256 == sha256Hex(data))
    }

    @Test func registersForHTTPAndHTTPS() throws {
        let registry = TransportRegistry([.http()])
        #expect(registry.schemes == ["http", "https"])
        #expect(try registry.transport(for: URL(string: "https://example.com/a")!) is HTTPTransport)
        #expect(HTTPTransport().capabilities == [.resume, .challenges, .validators, .ranges, .segments])
    }

    @Test func chunkedBodyHasNoExpectedLength() async throws {
        let data = try await Self.makeData()
        let server = try FaultServer { .serving(data, for: $0, chunked: true) }
        let sink = RecordingSink()
        try await HTTPTransport().transfer(.forTests(server.url("/chunked")), into: sink)
        #expect(sink.response?.expectedLength == nil)
        #expect(sha256Hex(sink.data) == sha256Hex(data))
    }

    /// A catalog is fetched into memory (`Library.fetchData`): a body announcing more than the
    /// limit is refused before its first byte, one without a length is cut at the limit; both
    /// errors name the URL and the limit, and a retry cannot help.
    @Test func aFetchedBodyIsHeldNoFurtherThanItsLimitWithOrWithoutALength() async throws {
        let data = randomData(256 * 1024, seed: 26)
        let limit = 64 * 1024
        for chunked in [false, true] {
            let server = try FaultServer { .serving(data, for: $0, chunked: chunked) }
            let url = server.url("/catalog.json")
            let error = try await #require(throws: LibraryError.self) {
                try await Library.fetchData(from: url, transports: TransportRegistry([.http()]), configuration: .forTests(), maxBytes: limit)
            }
            let expected = chunked ? "\(url.absoluteString) is larger than the 65536 bytes accepted here"
                : "\(url.absoluteString) is 262144 bytes; at most 65536 are accepted here"
            #expect(error.message.contains(expected), "\(error.message)")
            #expect(error.isRetryable == false)
            #expect(server.requests.count == 1, "refused, not retried")
        }
        // Within the limit, the body is the data.
        let server = try FaultServer { .serving(data, for: $0, chunked: true) }
        #expect(try await Library.fetchData(from: server.url("/catalog.json"), transports: TransportRegistry([.http()]),
                                            configuration: .forTests(), maxBytes: data.count) == data)
    }

    @Test func lastModifiedIsAWeakValidatorWithoutETag() async throws {
        let server = try FaultServer { .serving(Data("hello".utf8), for: $0, etag: nil) }
        let sink = RecordingSink()
        try await HTTPTransport().transfer(.forTests(server.url("/a")), into: sink)
        #expect(sink.response?.validator == ResourceValidator("last-modified:Tue, 01 Jul 2025 10:00:00 GMT", strength: .weak))
    }

    @Test func weakETagAloneIsAWeakValidator() async throws {
        let server = try FaultServer { .serving(Data("hello".utf8), for: $0, etag: "W/\"w1\"", lastModified: nil) }
        let sink = RecordingSink()
        try await HTTPTransport().transfer(.forTests(server.url("/a")), into: sink)
        #expect(sink.response?.validator == ResourceValidator("etag:W/\"w1\"", strength: .weak))
    }

    @Test func reusesOneConnectionAcrossAssets() async throws {
        let data = try await Self.makeData()
        let server = try FaultServer { .serving(data, for: $0) }
        // An engine of its own: the shared one's cache (64 connections) is shared with every
        // other test, whose connections can evict this one's between two transfers.
        let transport = HTTPTransport.withAnEngineOfItsOwn(configuration: HTTPTransport().configuration)
        for name in ["/a", "/b", "/c"] {
            let sink = RecordingSink()
            try await transport.transfer(.forTests(server.url(name)), into: sink)
            #expect(sink.data.count == data.count)
        }
        #expect(server.requests.count == 3)
        #expect(server.connectionCount == 1)
    }

    @Test func pausesOnBackPressureWithoutLosingOrReorderingBytes() async throws {
        let data = try await Self.makeData()
        let server = try FaultServer { .serving(data, for: $0) }
        let sink = PushbackSink()
        try await HTTPTransport(bufferSize: 64 * 1024).transfer(.forTests(server.url("/file.bin")), into: sink)
        #expect(sink.refusals > 5)
        #expect(sha256Hex(sink.data) == sha256Hex(data))
    }

    @Test func rethrowsTheSinksBeginErrorUnchanged() async throws {
        let data = try await Self.makeData()
        let server = try FaultServer { .serving(data, for: $0) }
        await #expect(throws: TransferRestart.self) {
            try await HTTPTransport().transfer(.forTests(server.url("/f")), into: FailingSink(TransferRestart(reason: "test"), when: .begin))
        }
    }

    @Test(arguments: [false, true])
    func rethrowsTheSinksWriteErrorUnchanged(writingBehind: Bool) async throws {
        let data = try await Self.makeData()
        let server = try FaultServer { .serving(data, for: $0) }
        await #expect(throws: MarkerError()) {
            try await httpTransport(writingBehind: writingBehind).transfer(.forTests(server.url("/f")), into: FailingSink(MarkerError(), when: .write))
        }
    }

    @Test func cancellationBeforeStartThrowsCancellationError() async throws {
        let server = try FaultServer { .serving(Data("x".utf8), for: $0) }
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            try await HTTPTransport().transfer(.forTests(server.url("/f")), into: RecordingSink())
        }
        await #expect(throws: CancellationError.self) { try await task.value }
    }

    @Test(arguments: [
        ("ftp://example.com/file", "not an http or https URL"),
        ("http:///file", "has no host"),
        ("file:///etc/passwd", "not an http or https URL"),
    ])
    func rejectsUnusableURLs(text: String, message: String) async throws {
        let url = try #require(URL(string: text))
        let error = await transportError { try await HTTPTransport().transfer(.forTests(url), into: RecordingSink()) }
        #expect(error?.code == .badURL)
        #expect(error?.isRetryable == false)
        #expect(error?.message.contains(message) == true)
    }

    @Test(arguments: ["http://127.0.0.1/a b", "http://exa mple.com/", "ftp://example.com/f", "https:///f", "http://"])
    func rejectsUnusableURLText(text: String) throws {
        #expect(throws: TransportError.self) { try HTTPTransport.url(from: text) }
        do {
            _ = try HTTPTransport.url(from: text)
        } catch let error as TransportError {
            #expect(error.code == .badURL)
        }
    }

    @Test func acceptsHTTPURLText() throws {
        #expect(try HTTPTransport.url(from: " https://cdn.example.com/a%20b.pdf ") == URL(string: "https://cdn.example.com/a%20b.pdf"))
    }

    @Test func rejectsHeaderValuesWithLineBreaks() async throws {
        var request = TransferJob.forTests(URL(string: "http://127.0.0.1:9/")!)
        request.headers = ["X-Test": "a\r\nInjected: yes"]
        let error = await transportError { try await HTTPTransport().transfer(request, into: RecordingSink()) }
        #expect(error?.code == .badURL)
    }

    @Test func messagesNeverContainCredentials() async throws {
        let server = try FaultServer { _ in ServerResponse(status: 404) }
        let url = URL(string: "http://user:secret@127.0.0.1:\(server.port)/missing")!
        let error = await transportError { try await HTTPTransport().transfer(.forTests(url), into: RecordingSink()) }
        #expect(error?.code == .notFound)
        #expect(error.map { "\($0)" }?.contains("secret") == false)
        #expect(error?.message.contains("HTTP 404") == true)
        #expect(error?.message.contains("/missing") == true)
    }

    @Test func anErrorNamesItsURLOnce() async throws {
        let server = try FaultServer { _ in ServerResponse(status: 404) }
        let url = server.url("/gone.bin")
        let text = await transportError { try await HTTPTransport().transfer(.forTests(url), into: RecordingSink()) }.map { "\($0)" } ?? ""
        #expect(text.components(separatedBy: url.absoluteString).count == 2)
        #expect(text.hasSuffix("(not-found)"))
        // A message that does not name the URL gets it appended.
        #expect("\(TransportError(.timedOut, "no data for 30 s", url: url))" == "no data for 30 s (\(url.absoluteString), timed-out)")
    }

    @Test func sendsExtraHeaders() async throws {
        let server = try FaultServer { .serving(Data("x".utf8), for: $0) }
        var request = TransferJob.forTests(server.url("/h"))
        request.headers = ["X-Edition": "42"]
        try await HTTPTransport(userAgent: "PaperboyTests/1").transfer(request, into: RecordingSink())
        #expect(server.requests.first?.header("x-edition") == "42")
        #expect(server.requests.first?.header("user-agent") == "PaperboyTests/1")
    }
}
