import Foundation
import Synchronization
import Paperboy
import PaperboyHTTP
import PaperboyTestServers
import PaperboyTesting
import Testing

/// No option of one request reaches the next (credentials, Range, headers); large bodies are
/// written behind.
@Suite("HTTP request isolation and write-behind")
struct RequestIsolationAndWriteBehindTests {
    let data = randomData(3 << 20 + 11)

    func writingBehind(bufferSize: Int = 64 * 1024) -> HTTPTransport {
        httpTransport(bufferSize: bufferSize, writingBehind: true)
    }

    // MARK: Reused handles leak no option

    @Test func requestsAfterAnAuthenticatedOneCarryNoAuthorization() async throws {
        let data = self.data
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
            try await HTTPTransport().transfer(job(server.url("/private")), into: authenticated)
            for url in [elsewhere, server.url("/public")] {
                let plain = RecordingSink()
                try await HTTPTransport().transfer(job(url), into: plain)
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
        let data = self.data
        let server = try FaultServer { .serving(data, for: $0) }
        let etag = ResourceValidator("etag:\"v1\"", strength: .strong)
        for _ in 0..<4 {
            let ranged = RecordingSink(startOffset: 1000)
            try await HTTPTransport().transfer(job(server.url("/ranged"), offset: 1000, validator: etag), into: ranged)
            #expect(ranged.response?.offset == 1000)
            let plain = RecordingSink()
            try await HTTPTransport().transfer(job(server.url("/plain")), into: plain)
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
        let data = self.data
        let server = try FaultServer { .serving(data, for: $0) }
        for _ in 0..<4 {
            var withHeader = job(server.url("/with"))
            withHeader.headers = ["X-Issue": "42"]
            try await HTTPTransport().transfer(withHeader, into: RecordingSink())
            try await HTTPTransport().transfer(job(server.url("/without")), into: RecordingSink())
        }
        #expect(server.requests.filter { $0.path == "/with" }.allSatisfy { $0.header("x-issue") == "42" })
        #expect(server.requests.filter { $0.path == "/without" }.allSatisfy { $0.header("x-issue") == nil })
    }

    // MARK: Write-behind

    @Test func aBodyWrittenBehindArrivesWholeAndInOrder() async throws {
        let data = self.data
        let server = try FaultServer { .serving(data, for: $0) }
        let sink = RecordingSink()
        try await writingBehind().transfer(job(server.url("/f")), into: sink)
        #expect(sink.data.count == data.count)
        #expect(sha256Hex(sink.data) == sha256Hex(data))
        #expect(sink.beginCount == 1)
    }

    @Test func aResumedBodyIsWrittenBehindFromItsOffset() async throws {
        let data = self.data
        let cut = 1_234_567
        let server = try FaultServer { .serving(data, for: $0) }
        let sink = RecordingSink(startOffset: Int64(cut))
        let etag = ResourceValidator("etag:\"v1\"", strength: .strong)
        try await writingBehind().transfer(job(server.url("/f"), offset: Int64(cut), validator: etag), into: sink)
        #expect(sha256Hex(data.prefix(cut) + sink.data) == sha256Hex(data))
    }

    @Test func aSinkPushingBackFillsTheRingAndPausesCurl() async throws {
        let data = self.data
        let server = try FaultServer { .serving(data, for: $0) }
        let sink = PushbackSink(pause: .milliseconds(20), every: 2)
        try await writingBehind(bufferSize: 16 * 1024).transfer(job(server.url("/f")), into: sink)
        #expect(sink.refusals > 5)
        #expect(sha256Hex(sink.data) == sha256Hex(data))
    }

    @Test func bytesBeforeAResetReachTheSinkWhenWritingBehind() async throws {
        let data = self.data
        let server = try FaultServer { .serving(data, for: $0, fault: .resetAfter(1_000_000)) }
        let sink = RecordingSink()
        let error = await transportError { try await writingBehind().transfer(job(server.url("/f")), into: sink) }
        #expect(error?.code == .connectionLost)
        #expect(error?.isRetryable == true)
        // Whatever curl received was handed to the sink before the error, in order.
        #expect(Bytes(sink.data) == Bytes(data.prefix(sink.data.count)))
        #expect(error?.message.contains("\(sink.data.count)") == true)
    }

    @Test func cancellingWhileTheRingDrainsStopsAtOnce() async throws {
        let body = randomData(100 * 1024)
        let server = try FaultServer { .serving(body, for: $0) }
        // The whole body fits in the ring, so libcurl is done at once; the sink then holds the
        // writer for 5 s (as a slow bandwidth limit would).
        let sink = PushbackSink(pause: .seconds(5), every: 1, limit: 1)
        let transport = writingBehind()
        let task = Task { try await transport.transfer(job(server.url("/f")), into: sink) }
        let deadline = ContinuousClock.now + .seconds(10)
        while sink.refusals == 0, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
        try await Task.sleep(for: .milliseconds(100))
        let start = ContinuousClock.now
        task.cancel()
        await #expect(throws: CancellationError.self) { try await task.value }
        // Before the sink's 5 s hold ends; generous for a loaded machine.
        #expect(ContinuousClock.now - start < .seconds(4))
    }

    @Test func aCancelledTransferStillWritesTheBytesItsRingHolds() async throws {
        let data = self.data
        // 128 KiB, then silence: all of it fits the 128 KiB ring, and the sink takes 100 ms a piece.
        let received = 128 * 1024
        let server = try FaultServer { .serving(data, for: $0, fault: .stallAfter(received)) }
        let sink = SlowSink(delay: 100_000)
        let task = Task { try await writingBehind().transfer(job(server.url("/f")), into: sink) }
        let deadline = ContinuousClock.now + .seconds(10)
        while sink.calls == 0, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
        try await Task.sleep(for: .milliseconds(50))
        task.cancel()
        await #expect(throws: CancellationError.self) { try await task.value }
        // Stopped (as Ctrl-C stops a sync): what was received reached the sink, so the next
        // attempt does not fetch it again.
        #expect(Bytes(sink.data) == Bytes(data.prefix(received)))
    }

    /// Through the real sink: durable checkpoints, and the bandwidth limiter pushing back on the
    /// writer thread (3 MiB at 6 MB/s cannot take much less than half a second).
    @Test(arguments: [nil, 6_000_000] as [Int64?])
    func theLibraryDeliversABodyWrittenBehind(bandwidthLimit: Int64?) async throws {
        let data = self.data
        let server = try FaultServer { .serving(data, for: $0) }
        let folder = TempFolder()
        var configuration = testConfiguration()
        configuration.syncsToDisk = true
        configuration.bandwidthLimit = bandwidthLimit
        let start = ContinuousClock.now
        let delegate = try await downloadThroughLibrary(
            server.url("/f"), in: folder, configuration: configuration, sha256: sha256Hex(data), transport: writingBehind())
        #expect(delegate.deliveredSHA256 == sha256Hex(data))
        if bandwidthLimit != nil { #expect(ContinuousClock.now - start > .milliseconds(350)) }
    }
}
