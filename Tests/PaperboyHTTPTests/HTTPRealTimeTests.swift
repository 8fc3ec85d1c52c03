import Foundation
import Paperboy
import PaperboyHTTP
import PaperboyTestServers
import PaperboyTesting
import Testing

/// What the HTTP transport does in real time: a stop while a sink holds the writer, a bandwidth
/// limit through the library. One at a time. No upper bound on the wall clock: a stop that is not
/// prompt waits for an hour's timeout or hold, and fails by the suite's time limit.
@Suite("HTTP stops and limits in real time", .serialized, .timeLimit(.minutes(3)))
struct HTTPRealTimeTests {
    /// The test file, made once on a thread of its own: megabytes take a debug build tens of
    /// milliseconds, too long for the cooperative pool (and made by every test at once, even
    /// for a thread each).
    static let made = Task { try await offThePool { randomData(3 << 20 + 17) } }
    static func makeData() async throws -> Data { try await made.value }

    /// Written behind, bytes before the stall reach the sink after 20 ms of quiet.
    @Test(arguments: [false, true])
    func cancellationStopsAStalledTransferPromptly(writingBehind: Bool) async throws {
        let data = try await Self.makeData()
        let server = try FaultServer { .serving(data, for: $0, fault: .stallAfter(100_000)) }
        let sink = RecordingSink()
        let transport = httpTransport(writingBehind: writingBehind)
        let task = Task { try await transport.transfer(.forTests(server.url("/f"), idleTimeout: .seconds(3600)), into: sink) }
        try await eventually(
            "the 100000 bytes before the stall in the sink",
            seen: "\(server.connectionCount) connections, \(server.requests.count) requests, \(sink.data.count) bytes, "
                + "began: \(sink.beginCount), accept failures: [\(server.acceptFailures)], port \(server.port)"
        ) { sink.data.count >= 100_000 }
        task.cancel()
        // Only the cancellation can end it: the idle timeout is an hour away.
        await #expect(throws: CancellationError.self) { try await task.value }
        #expect(Bytes(sink.data) == Bytes(data.prefix(100_000)))
    }

    @Test func cancellingWhileTheRingDrainsStopsAtOnce() async throws {
        let body = randomData(100 * 1024)
        let server = try FaultServer { .serving(body, for: $0) }
        // The whole body fits in the ring, so libcurl is done at once; the sink then holds the
        // writer for an hour (as a slow bandwidth limit would).
        let sink = PushbackSink(pause: .seconds(3600), every: 1, limit: 1)
        let transport = httpTransport(bufferSize: 64 * 1024, writingBehind: true)
        let task = Task { try await transport.transfer(.forTests(server.url("/f")), into: sink) }
        // libcurl has read the whole body once the server sent it and nothing of it is left
        // unread: the request is finished on the curl thread before it takes the cancel.
        try await eventually(
            "the sink's push-back and libcurl reading all \(body.count) bytes",
            seen: "\(sink.refusals) refusals, \(server.bodyBytesSent) bytes sent, \(server.unreadBytes) unread"
        ) { sink.refusals > 0 && server.bodyBytesSent == body.count && server.unreadBytes == 0 }
        task.cancel()
        // Only the cancellation can end it: the sink's hold lasts an hour.
        await #expect(throws: CancellationError.self) { try await task.value }
    }

    /// Through the real sink: durable checkpoints, and the bandwidth limiter pushing back on the
    /// writer thread (3 MiB at 6 MB/s cannot take much less than half a second).
    @Test(arguments: [nil, 6_000_000] as [Int64?])
    func theLibraryDeliversABodyWrittenBehind(bandwidthLimit: Int64?) async throws {
        let data = try await Self.makeData()
        let server = try FaultServer { .serving(data, for: $0) }
        let folder = TempFolder()
        var configuration = Library.Configuration.forTests(attempts: 1)
        configuration.syncsToDisk = true
        configuration.bandwidthLimit = bandwidthLimit
        let start = ContinuousClock.now
        let delegate = try await downloadThroughLibrary(
            server.url("/f"), in: folder, configuration: configuration, sha256: sha256Hex(data),
            transport: httpTransport(writingBehind: true))
        #expect(delegate.deliveredSHA256 == sha256Hex(data))
        if bandwidthLimit != nil { #expect(ContinuousClock.now - start > .milliseconds(350)) }
    }
}
