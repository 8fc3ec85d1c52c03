import Foundation
import Paperboy
import PaperboyHTTP
import PaperboyTestServers
import PaperboyTesting
import Synchronization
import Testing

@Suite("Range resume", .timeLimit(.minutes(2)))
struct RangeResumeTests {
    /// The test file, made once on a thread of its own: megabytes take a debug build tens of
    /// milliseconds, too long for the cooperative pool (and made by every test at once, even
    /// for a thread each).
    static let made = Task { try await offThePool { randomData(2 << 20 + 5) } }
    static func makeData() async throws -> Data { try await made.value }
    let cut = 700_001
    let etag = ResourceValidator("etag:\"v1\"", strength: .strong)

    @Test func resumesWithRangeAndIfRangeOnTheStrongETag() async throws {
        let data = try await Self.makeData()
        let server = try FaultServer { .serving(data, for: $0) }
        let sink = RecordingSink(startOffset: Int64(cut))
        try await HTTPTransport().transfer(.forTests(server.url("/f"), offset: Int64(cut), validator: etag), into: sink)
        #expect(server.requests.first?.header("range") == "bytes=\(cut)-")
        #expect(server.requests.first?.header("if-range") == "\"v1\"")
        #expect(server.requests.first?.header("accept-encoding") == "identity")
        #expect(sink.response == TransferResponse(offset: Int64(cut), expectedLength: Int64(data.count), validator: etag))
        #expect(sha256Hex(data.prefix(cut) + sink.data) == sha256Hex(data))
    }

    @Test func resumesWithIfRangeOnLastModifiedWithoutStrongETag() async throws {
        let data = try await Self.makeData()
        let server = try FaultServer { .serving(data, for: $0, etag: nil) }
        let modified = ResourceValidator("last-modified:Tue, 01 Jul 2025 10:00:00 GMT", strength: .weak)
        let sink = RecordingSink(startOffset: Int64(cut))
        try await HTTPTransport().transfer(.forTests(server.url("/f"), offset: Int64(cut), validator: modified), into: sink)
        #expect(server.requests.first?.header("if-range") == "Tue, 01 Jul 2025 10:00:00 GMT")
        #expect(sink.response?.offset == Int64(cut))
        #expect(sha256Hex(data.prefix(cut) + sink.data) == sha256Hex(data))
    }

    @Test func withoutAValidatorItFetchesEverything() async throws {
        let data = try await Self.makeData()
        let server = try FaultServer { .serving(data, for: $0) }
        let sink = RecordingSink()
        try await HTTPTransport().transfer(.forTests(server.url("/f"), offset: Int64(cut), validator: nil), into: sink)
        #expect(server.requests.first?.header("range") == nil)
        #expect(sink.response?.offset == 0)
        #expect(sha256Hex(sink.data) == sha256Hex(data))
    }

    @Test func aWeakETagCannotGuardAResume() async throws {
        let data = try await Self.makeData()
        let server = try FaultServer { .serving(data, for: $0, etag: "W/\"w\"", lastModified: nil) }
        let sink = RecordingSink()
        try await HTTPTransport().transfer(.forTests(server.url("/f"), offset: Int64(cut), validator: ResourceValidator("etag:W/\"w\"", strength: .weak)), into: sink)
        #expect(server.requests.first?.header("range") == nil)
        #expect(sha256Hex(sink.data) == sha256Hex(data))
    }

    @Test func anIgnoredRangeStartsOverFromZero() async throws {
        let data = try await Self.makeData()
        let server = try FaultServer { .serving(data, for: $0, honoursRange: false) }
        let sink = RecordingSink()
        try await HTTPTransport().transfer(.forTests(server.url("/f"), offset: Int64(cut), validator: etag), into: sink)
        #expect(sink.response?.offset == 0)
        #expect(sha256Hex(sink.data) == sha256Hex(data))
    }

    @Test func aChangedETagSendsTheWholeNewVersion() async throws {
        let data = try await Self.makeData()
        let fresh = try await offThePool { randomData(data.count, seed: 7) }
        let server = try FaultServer { .serving(fresh, for: $0, etag: "\"v2\"") }
        let sink = RecordingSink()
        try await HTTPTransport().transfer(.forTests(server.url("/f"), offset: Int64(cut), validator: etag), into: sink)
        #expect(server.requests.first?.header("if-range") == "\"v1\"")
        #expect(sink.response == TransferResponse(offset: 0, expectedLength: Int64(fresh.count), validator: ResourceValidator("etag:\"v2\"", strength: .strong)))
        #expect(sha256Hex(sink.data) == sha256Hex(fresh))
    }

    @Test func a416WithEverythingOnDiskFinishesWithoutData() async throws {
        let data = try await Self.makeData()
        let server = try FaultServer { .serving(data, for: $0) }
        let sink = RecordingSink(startOffset: Int64(data.count))
        try await HTTPTransport().transfer(.forTests(server.url("/f"), offset: Int64(data.count), validator: etag), into: sink)
        #expect(server.requests.count == 1)
        #expect(sink.response == TransferResponse(offset: Int64(data.count), expectedLength: Int64(data.count), validator: etag))
        #expect(sink.data.isEmpty)
    }

    @Test func a416ForAnotherLengthStartsOver() async throws {
        let data = try await Self.makeData()
        let server = try FaultServer { request in
            if request.header("range") != nil {
                return ServerResponse(status: 416, headers: [("Content-Range", "bytes */\(data.count)")])
            }
            return .serving(data, for: request)
        }
        let sink = RecordingSink()
        try await HTTPTransport().transfer(.forTests(server.url("/f"), offset: Int64(cut), validator: etag), into: sink)
        #expect(server.requests.count == 2)
        #expect(server.requests.last?.header("range") == nil)
        #expect(sink.beginCount == 1)
        #expect(sink.response?.offset == 0)
        #expect(sha256Hex(sink.data) == sha256Hex(data))
    }

    @Test func a206AtAnotherOffsetRestartsFromZero() async throws {
        let data = try await Self.makeData()
        let server = try FaultServer { _ in
            ServerResponse(status: 206, headers: [("ETag", "\"v1\""), ("Content-Range", "bytes 10-\(data.count - 1)/\(data.count)")],
                           body: data.subdata(in: 10..<data.count))
        }
        await #expect(throws: TransferRestart.self) {
            try await HTTPTransport().transfer(.forTests(server.url("/f"), offset: Int64(cut), validator: etag), into: RecordingSink())
        }
    }

    @Test func theLibraryResumesAfterAResetFromTheLastByte() async throws {
        let data = try await Self.makeData()
        let cut = self.cut
        let server = try FaultServer { request in
            .serving(data, for: request, fault: request.index == 0 ? .resetAfter(cut) : .none)
        }
        let folder = TempFolder()
        let delegate = try await downloadThroughLibrary(
            server.url("/f"), in: folder, configuration: .forTests(attempts: 3), sha256: sha256Hex(data))
        #expect(delegate.deliveredSHA256 == sha256Hex(data), "events: \(delegate.events)")
        #expect(server.requests.count >= 2)
        // The resume starts from what reached the partial file: after 0, at most at the cut (the
        // server resets once the client's kernel holds every byte sent, or after 10 s without
        // room there, dropping what it had not sent).
        let range = server.requests.last?.header("range") ?? ""
        let offset = Int(range.dropFirst("bytes=".count).dropLast()) ?? -1
        #expect(range.hasPrefix("bytes=") && range.hasSuffix("-"), "\(range)")
        #expect(offset > 0 && offset <= cut, "\(range)")
        #expect(server.requests.last?.header("if-range") == "\"v1\"")
    }

    @Test func theLibraryNeverSplicesTwoVersions() async throws {
        let data = try await Self.makeData()
        let old = try await Self.makeData()
        let fresh = try await offThePool { randomData(data.count + 1000, seed: 9) }
        let cut = self.cut
        let server = try FaultServer { request in
            request.index == 0
                ? .serving(old, for: request, etag: "\"v1\"", fault: .resetAfter(cut))
                : .serving(fresh, for: request, etag: "\"v2\"")
        }
        let folder = TempFolder()
        let delegate = try await downloadThroughLibrary(server.url("/f"), in: folder, configuration: .forTests(attempts: 2))
        // What reached the partial file before the reset (at most the cut).
        let resumedAt = Int(server.requests.last?.header("range")?.dropFirst("bytes=".count).dropLast() ?? "") ?? -1
        #expect(resumedAt > 0 && resumedAt <= cut, "\(String(describing: server.requests.last?.header("range")))")
        #expect(delegate.deliveredSHA256 == sha256Hex(fresh))
    }

    @Test func theLibraryFinishesOnA416WhenTheFileIsComplete() async throws {
        // The first attempt receives every byte but was promised 10 more, then the connection
        // drops: the retry asks for bytes past the end, gets 416 `bytes */N` and finishes.
        let data = try await Self.makeData()
        let server = try FaultServer { request in
            if request.index == 0 {
                var response = ServerResponse.serving(data, for: request, fault: .resetAfter(data.count))
                response.headers.append(("Content-Length", "\(data.count + 10)"))
                return response
            }
            return .serving(data, for: request)
        }
        let folder = TempFolder()
        let delegate = try await downloadThroughLibrary(
            server.url("/f"), in: folder, configuration: .forTests(attempts: 2))
        // Normally everything is on disk and the server answers 416; a client that left no room
        // for 10 s loses the unsent tail to the reset, and the resume then fetches it.
        let resumedAt = Int(server.requests.last?.header("range")?.dropFirst("bytes=".count).dropLast() ?? "") ?? -1
        #expect(resumedAt > 0 && resumedAt <= data.count)
        #expect(delegate.deliveredSHA256 == sha256Hex(data), "events: \(delegate.events)")
    }
}
