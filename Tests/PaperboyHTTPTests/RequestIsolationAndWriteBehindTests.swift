import Foundation
import Synchronization
import Paperboy
import PaperboyHTTP
import PaperboyTestServers
import PaperboyTesting
import Testing

/// No option of one request reaches the next (credentials, Range, headers); large bodies are
/// written behind.
@Suite("HTTP request isolation and write-behind", .timeLimit(.minutes(2)))
struct RequestIsolationAndWriteBehindTests {
    /// The test file, made once on a thread of its own: megabytes take a debug build tens of
    /// milliseconds, too long for the cooperative pool (and made by every test at once, even
    /// for a thread each).
    static let made = Task { try await offThePool { randomData(3 << 20 + 11) } }
    static func makeData() async throws -> Data { try await made.value }

    func writingBehind(bufferSize: Int = 64 * 1024) -> HTTPTransport {
        httpTransport(bufferSize: bufferSize, writingBehind: true)
    }

    // MARK: Reused handles leak no option

    @Test func requestsAfterAnAuthenticatedOneCarryNoAuthorization() async throws {
        let data = try await Self.makeData()
        let server = try FaultServer { request in
            if request.path == "/private", !ServerAuth.isBasic(request, user: "reader", password: "s3cret") {
                return ServerResponse(status: 401, headers: [("WWW-Authenticate", ServerAuth.basicChallenge(realm: "r"))])
            }
            return .serving(data, for: request)
        }
        let elsewhere = try #require(URL(string: "http://localhost:\(server.port)/public"))
        // Several rounds, alternating, on one shared connection cache.
        for _ in 0..<4 {
            let authenticated = RecordingSink { _ in .useCredential(Credential(user: "reader", password: "s3cret")) }
            try await HTTPTransport().transfer(.forTests(server.url("/private")), into: authenticated)
            for url in [elsewhere, server.url("/public")] {
                let plain = RecordingSink()
                try await HTTPTransport().transfer(.forTests(url), into: plain)
                #expect(sha256Hex(plain.data) == sha256Hex(data))
                #expect(plain.challenges.isEmpty)
            }
        }
        let publicRequests = server.requests.filter { $0.path == "/public" }
        #expect(publicRequests.count == 8)
        #expect(publicRequests.allSatisfy { $0.header("authorization") == nil })
        #expect(server.requests.contains { $0.path == "/private" && $0.header("authorization") != nil })
    }

    @Test func requestsAfterARangedOneAskForNoRange() async throws {
        let data = try await Self.makeData()
        let server = try FaultServer { .serving(data, for: $0) }
        let etag = ResourceValidator("etag:\"v1\"", strength: .strong)
        for _ in 0..<4 {
            let ranged = RecordingSink(startOffset: 1000)
            try await HTTPTransport().transfer(.forTests(server.url("/ranged"), offset: 1000, validator: etag), into: ranged)
            #expect(ranged.response?.offset == 1000)
            let plain = RecordingSink()
            try await HTTPTransport().transfer(.forTests(server.url("/plain")), into: plain)
            #expect(plain.response?.offset == 0)
            #expect(sha256Hex(plain.data) == sha256Hex(data))
        }
        let ranged = server.requests.filter { $0.path == "/ranged" }
        let plain = server.requests.filter { $0.path == "/plain" }
        #expect(ranged.count == 4 && ranged.allSatisfy { $0.header("range") == "bytes=1000-" })
        #expect(plain.count == 4)
        #expect(plain.allSatisfy { $0.header("range") == nil && $0.header("if-range") == nil })
    }

    @Test func extraHeadersDoNotReachTheNextRequest() async throws {
        let data = try await Self.makeData()
        let server = try FaultServer { .serving(data, for: $0) }
        for _ in 0..<4 {
            var withHeader = TransferJob.forTests(server.url("/with"))
            withHeader.headers = ["X-Issue": "42"]
            try await HTTPTransport().transfer(withHeader, into: RecordingSink())
            try await HTTPTransport().transfer(.forTests(server.url("/without")), into: RecordingSink())
        }
        #expect(server.requests.filter { $0.path == "/with" }.allSatisfy { $0.header("x-issue") == "42" })
        #expect(server.requests.filter { $0.path == "/without" }.allSatisfy { $0.header("x-issue") == nil })
    }

    // MARK: Write-behind

    @Test func aBodyWrittenBehindArrivesWholeAndInOrder() async throws {
        let data = try await Self.makeData()
        let server = try FaultServer { .serving(data, for: $0) }
        let sink = RecordingSink()
        try await writingBehind().transfer(.forTests(server.url("/f")), into: sink)
        #expect(sink.data.count == data.count)
        #expect(sha256Hex(sink.data) == sha256Hex(data))
        #expect(sink.beginCount == 1)
    }

    @Test func aResumedBodyIsWrittenBehindFromItsOffset() async throws {
        let data = try await Self.makeData()
        let cut = 1_234_567
        let server = try FaultServer { .serving(data, for: $0) }
        let sink = RecordingSink(startOffset: Int64(cut))
        let etag = ResourceValidator("etag:\"v1\"", strength: .strong)
        try await writingBehind().transfer(.forTests(server.url("/f"), offset: Int64(cut), validator: etag), into: sink)
        #expect(sha256Hex(data.prefix(cut) + sink.data) == sha256Hex(data))
    }

    @Test func aSinkPushingBackFillsTheRingAndPausesCurl() async throws {
        let data = try await Self.makeData()
        let server = try FaultServer { .serving(data, for: $0) }
        let sink = PushbackSink(pause: .milliseconds(20), every: 2)
        try await writingBehind(bufferSize: 16 * 1024).transfer(.forTests(server.url("/f")), into: sink)
        #expect(sink.refusals > 5)
        #expect(sha256Hex(sink.data) == sha256Hex(data))
    }

    @Test func bytesBeforeAResetReachTheSinkWhenWritingBehind() async throws {
        let data = try await Self.makeData()
        let server = try FaultServer { .serving(data, for: $0, fault: .resetAfter(1_000_000)) }
        let sink = RecordingSink()
        let error = await transportError { try await writingBehind().transfer(.forTests(server.url("/f")), into: sink) }
        #expect(error?.code == .connectionLost)
        #expect(error?.isRetryable == true)
        // Whatever curl received was handed to the sink before the error, in order.
        #expect(Bytes(sink.data) == Bytes(data.prefix(sink.data.count)))
        #expect(error?.message.contains("\(sink.data.count)") == true)
    }

    @Test func aCancelledTransferStillWritesTheBytesItsRingHolds() async throws {
        let data = try await Self.makeData()
        // 128 KiB, then silence: all of it fits the 128 KiB ring, while the sink holds its first
        // write until the cancel. When other tests hold every write-behind slot, the transport
        // writes inline on the curl thread, which the gate does not hold: the bytes then reach
        // the sink as they come, and the promise below is the same.
        let received = 128 * 1024
        let server = try FaultServer { .serving(data, for: $0, fault: .stallAfter(received)) }
        let sink = GatedSink()
        defer { sink.open() }
        let task = Task { try await writingBehind().transfer(.forTests(server.url("/f")), into: sink) }
        try await eventually(
            "the sink's first write and libcurl reading the \(received) bytes sent",
            seen: "\(sink.calls) writes, \(server.bodyBytesSent) bytes sent, \(server.unreadBytes) unread"
        ) { sink.calls > 0 && server.bodyBytesSent == received && server.unreadBytes == 0 }
        task.cancel()
        sink.open()
        await #expect(throws: CancellationError.self) { try await task.value }
        // Stopped (as Ctrl-C stops a sync): what was received reached the sink, so the next
        // attempt does not fetch it again.
        #expect(Bytes(sink.data) == Bytes(data.prefix(received)))
    }
}
