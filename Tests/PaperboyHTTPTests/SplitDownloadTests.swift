import Dispatch
import Foundation
import Paperboy
import PaperboyHTTP
import PaperboyTestServers
import PaperboyTesting
import Synchronization
import Testing

/// One large file over several connections (`connections_per_asset`), against a real nginx: the
/// bytes are identical, several connections ask for ranges, a source that will not serve a range
/// of the same version is fetched whole by the first connection, and a stop resumes from the
/// bytes written without a gap.
@Suite("One large HTTP file over several connections", .serialized, .timeLimit(.minutes(3)))
struct SplitDownloadTests {
    let folder = TempFolder()
    /// Twice the split threshold (32 MiB): four pieces of 16 MiB.
    let size = 64 << 20

    /// An nginx location `/first-slow/` where the request without `Range` (the one that begins)
    /// gets `rate` and ranges all nginx can send, so that the other connections always write
    /// pieces before the first one could reach them.
    func firstSlowed(_ rate: String) -> String {
        "location ^~ /first-slow/ { if ($http_range = \"\") { set $limit_rate \(rate); } }"
    }

    @Test func aLargeFileOverFourConnectionsIsByteIdentical() async throws {
        let data = try await generated(size, seed: 421)
        guard let nginx = try await startNginx(files: ["first-slow/big.bin": data], locations: firstSlowed("8m")) else { return }
        defer { nginx.stop() }
        let delegate = try await downloadThroughLibrary(
            nginx.url("/first-slow/big.bin"), in: folder, configuration: Library.Configuration.split(connections: 4), sha256: sha256Hex(data))

        #expect(delegate.deliveredSHA256 == sha256Hex(data), "\(delegate.events.suffix(3))")
        // nginx logs a request the client ended early once it notices: waited for. How many
        // connections carry the three ranges depends on timing (a connection that finished its
        // piece is reused for the next); that three are in flight at once is
        // `threeRangesAreInFlightAtOnceOnThreeMoreConnections`.
        try await eventually("three ranges answered 206 on another connection than the first", seen: "\(nginx.connectionLog)") {
            let log = nginx.connectionLog
            return log.filter { $0.contains(" 206 \"bytes=") }.count >= 3 && Set(log.compactMap { $0.split(separator: " ").first }).count >= 2
        }
    }

    /// Four connections per asset ask for three ranges at once, each on a connection of its own:
    /// the server answers no range until three are waiting, and holds the first response after
    /// 1 MiB until then (a client asking one range after another would never get an answer).
    @Test func threeRangesAreInFlightAtOnceOnThreeMoreConnections() async throws {
        let data = try await generated(40 << 20, seed: 426)
        let waiting = ThreadBarrier(parties: 3)
        let server = try FaultServer { request in
            guard request.header("range") != nil else {
                return .serving(data, for: request, fault: .holdAfter(1 << 20, until: { waiting.wait() }))
            }
            waiting.arrive()
            waiting.wait()
            return .serving(data, for: request)
        }
        defer {
            waiting.release()
            server.stop()
        }
        let delegate = try await downloadThroughLibrary(
            server.url("/big.bin"), in: folder, configuration: Library.Configuration.split(connections: 4), sha256: sha256Hex(data))

        #expect(delegate.deliveredSHA256 == sha256Hex(data), "\(delegate.events.suffix(3))")
        #expect(waiting.opened, "ranges never in flight together: \(server.requests.map { "\($0.connection) \($0.header("range") ?? "-")" })")
        let rangeConnections = Set(server.requests.filter { $0.header("range") != nil }.map(\.connection))
        let first = server.requests.first { $0.header("range") == nil }?.connection
        #expect(rangeConnections.count >= 3 && first.map { !rangeConnections.contains($0) } == true, "\(server.requests.map(\.connection))")
    }

    /// The bytes are dealt from the front in pieces of at most 16 MiB, each asked for on its own:
    /// with two connections, 64 MiB are four pieces, and the first range asked is the second
    /// piece (not the second half of the file), so that the bytes without a gap grow while the
    /// pieces arrive. The first response holds after 1 MiB until a range is asked, so that the
    /// first request cannot stream on over the pieces before another connection asks.
    @Test func thePiecesAreAskedFromTheFrontAtMostTheLargestPieceEach() async throws {
        let data = try await generated(size, seed: 427)
        let asked = ThreadBarrier(parties: 1)
        let server = try FaultServer { request in
            guard request.header("range") != nil else {
                return .serving(data, for: request, fault: .holdAfter(1 << 20, until: { asked.wait() }))
            }
            asked.arrive()
            return .serving(data, for: request)
        }
        defer {
            asked.release()
            server.stop()
        }
        let delegate = try await downloadThroughLibrary(
            server.url("/big.bin"), in: folder, configuration: Library.Configuration.split(connections: 2), sha256: sha256Hex(data))

        #expect(delegate.deliveredSHA256 == sha256Hex(data), "\(delegate.events.suffix(3))")
        let ranges = server.requests.compactMap { $0.header("range") }
        #expect(ranges.first == "bytes=\(16 << 20)-\((32 << 20) - 1)", "\(ranges)")
        let lengths = ranges.compactMap { range -> Int? in
            let bounds = range.dropFirst("bytes=".count).split(separator: "-").compactMap { Int($0) }
            return bounds.count == 2 ? bounds[1] - bounds[0] + 1 : nil
        }
        #expect(lengths.count == ranges.count && lengths.allSatisfy { $0 <= 16 << 20 }, "\(ranges)")
    }

    /// The other connections wait for the first request's head: a transfer cancelled before it
    /// comes still ends.
    @Test func aTransferThatMaySplitEndsWhenCancelledBeforeItsHead() async throws {
        let answer = DispatchSemaphore(value: 0)
        let server = try FaultServer { request in
            answer.wait()
            return .serving(Data("x".utf8), for: request)
        }
        defer {
            answer.signal()
            server.stop()
        }
        var job = TransferJob.forTests(server.url("/f"))
        job.connectionsPerAsset = 4
        let task = Task { [job] in try await HTTPTransport().transfer(job, into: RecordingSink()) }
        try await eventually("the request reached the server", seen: "\(server.requests.count) requests") { server.requests.count == 1 }
        task.cancel()
        await #expect(throws: CancellationError.self) { try await task.value }
    }

    /// The first request's connection resets after 1 MiB: its piece is continued by another
    /// connection, with a range from its next byte written through the sink, in the same attempt.
    @Test func aPieceWhoseConnectionFailedIsContinuedByAnother() async throws {
        let data = try await generated(40 << 20, seed: 425)
        let server = try FaultServer { request in
            request.header("range") == nil ? .serving(data, for: request, fault: .resetAfter(1 << 20)) : .serving(data, for: request)
        }
        defer { server.stop() }
        let delegate = try await downloadThroughLibrary(
            server.url("/big.bin"), in: folder, configuration: Library.Configuration.split(connections: 4), sha256: sha256Hex(data))

        #expect(delegate.deliveredSHA256 == sha256Hex(data), "\(delegate.events.suffix(3))")
        let ranges = server.requests.compactMap { $0.header("range") }
        // The first piece is the first quarter (10 MiB): someone asked for its rest.
        #expect(ranges.contains { range in
            Int(range.dropFirst(6).prefix { $0 != "-" }).map { $0 <= 1 << 20 } ?? false
        }, "\(ranges)")
    }

    /// One piece's bytes differ on the server (one byte in the last quarter, for ranges only;
    /// the first request resets after 1 MiB, so that ranges fetch the rest): the whole-file
    /// SHA-256, fed while the pieces arrive, still catches it, and nothing is kept.
    @Test func aCorruptedPieceFailsTheChecksum() async throws {
        let data = try await generated(40 << 20, seed: 427)
        var changed = data
        changed[changed.startIndex + (35 << 20)] ^= 0xFF
        let corrupted = changed
        let server = try FaultServer { request in
            request.header("range") == nil
                ? .serving(data, for: request, fault: .resetAfter(1 << 20)) : .serving(corrupted, for: request)
        }
        defer { server.stop() }
        let delegate = try await downloadThroughLibrary(
            server.url("/big.bin"), in: folder, configuration: Library.Configuration.split(connections: 4), sha256: sha256Hex(data))

        #expect(delegate.deliveredSHA256 == nil, "\(delegate.events.suffix(3))")
        #expect(delegate.failures.map(\.code) == [.checksumMismatch], "\(delegate.events.suffix(3))")
        #expect(server.requests.contains { $0.header("range") != nil }, "no range was asked for")
    }

    /// A hostile or broken source answers each range with 206 but with other bytes than asked
    /// (the file from its start, saying so in Content-Range): nothing of those answers is
    /// written, their connections are dropped, and the first connection fetches the rest in the
    /// same attempt.
    @Test func aRangeAnsweredWithOtherBytesThanAskedIsNeverWritten() async throws {
        let data = try await generated(40 << 20, seed: 426)
        let server = try FaultServer { request in
            guard request.header("range") != nil else { return .serving(data, for: request) }
            return ServerResponse(
                status: 206, headers: [("ETag", "\"v1\""), ("Last-Modified", "Tue, 01 Jul 2025 10:00:00 GMT"),
                                       ("Content-Range", "bytes 0-\(data.count - 1)/\(data.count)")],
                body: data)
        }
        defer { server.stop() }
        // Held after 1 MiB until a range was asked for: on a loaded machine the first connection
        // could fetch the whole file before another connection asked (CI, 27 November 2026).
        let delegate = try await downloadHeld(server.url("/big.bin"), sha256: sha256Hex(data), until: "a range asked for",
                                              seen: { "\(server.requests.map { $0.header("range") ?? "-" })" }) {
            server.requests.contains { $0.header("range") != nil }
        }

        #expect(delegate.deliveredSHA256 == sha256Hex(data), "\(delegate.events.suffix(3))")
        #expect(server.requests.contains { $0.header("range") != nil }, "no range was asked for")
    }

    /// The download is held after 1 MiB until nginx has logged the three other connections'
    /// ranges, so that they are asked for whatever the machine's pace; then it goes on.
    func downloadHeldUntilThreeRanges(_ url: URL, from nginx: NginxServer, answeredWith status: String, sha256: String) async throws -> RecordingDelegate {
        try await downloadHeld(url, sha256: sha256, until: "three ranges answered \(status)", seen: { "\(nginx.accessLog)" }) {
            nginx.accessLog.filter { $0.hasPrefix("\(status) \"bytes=") }.count == 3
        }
    }

    /// The download over 4 connections, held after 1 MiB until `asked` (what the server saw of
    /// the other connections) is true, so that ranges are asked for whatever the machine's pace;
    /// then it goes on to its end.
    func downloadHeld(_ url: URL, sha256: String, until what: String, seen: @Sendable () -> String,
                      _ asked: @Sendable () -> Bool) async throws -> RecordingDelegate {
        let held = HoldingTransport(base: HTTPTransport(), holdingAfter: 1 << 20)
        let library = try Library.open(at: folder.file("library"), transports: TransportRegistry([held]),
                                       configuration: Library.Configuration.split(connections: 4))
        let delegate = RecordingDelegate()
        let asset = try await library.addIssue(name: "issue", date: Date()).addAsset(AssetRequest(url: url, sha256: sha256))
        try await asset.download(delegate: delegate)
        try await eventually(what, seen: seen()) { held.isHolding && asked() }
        held.release()
        await delegate.waitForEnd()
        await library.close()
        return delegate
    }

    @Test func aSourceAnsweringRangesWithTheWholeFileIsFetchedByOneConnection() async throws {
        let data = try await generated(size, seed: 422)
        // Announces ranges, then answers every range with the whole file.
        guard let nginx = try await startNginx(files: ["whole/big.bin": data], locations: """
            location ^~ /whole/ { max_ranges 0; add_header Accept-Ranges bytes; }
            """) else { return }
        defer { nginx.stop() }
        let delegate = try await downloadHeldUntilThreeRanges(nginx.url("/whole/big.bin"), from: nginx, answeredWith: "200", sha256: sha256Hex(data))

        #expect(delegate.deliveredSHA256 == sha256Hex(data), "\(delegate.events.suffix(3))")
        let log = nginx.accessLog
        #expect(log.contains("200 \"-\" \(size)"), "\(log)")
        #expect(!log.contains { $0.hasPrefix("206") }, "\(log)")
        #expect(log.count == 4, "the refused connections asked once each: \(log)")
    }

    @Test func aRangeOfAnotherVersionIsNeverWritten() async throws {
        let data = try await generated(size, seed: 423)
        // Last-Modified is the validator (no ETag), and `If-Range` carries it; every 206 says
        // it is another version (a strong ETag).
        guard let nginx = try await startNginx(files: ["changing/big.bin": data], locations: """
            location ^~ /changing/ { etag off; if ($http_range) { add_header ETag "\\"v2\\""; } }
            """) else { return }
        defer { nginx.stop() }
        let delegate = try await downloadHeldUntilThreeRanges(nginx.url("/changing/big.bin"), from: nginx, answeredWith: "206", sha256: sha256Hex(data))

        #expect(delegate.deliveredSHA256 == sha256Hex(data), "\(delegate.events.suffix(3))")
        // Every byte came from the first connection: the three ranges were refused at their head.
        let log = nginx.accessLog
        #expect(log.contains("200 \"-\" \(size)"), "\(log)")
        #expect(log.count == 4, "\(log)")
    }

    @Test func aStoppedSplitDownloadResumesFromTheBytesWithoutAGap() async throws {
        let data = try await generated(size, seed: 424)
        // The request that begins (no Range) gets 1 MB/s, the ranges all nginx can send: the
        // other pieces fill while the first one trickles.
        guard let nginx = try await startNginx(files: ["first-slow/big.bin": data], locations: firstSlowed("1m")) else { return }
        defer { nginx.stop() }
        // Held after 24 MiB in all, nearly all of them the other connections': past a gap.
        let held = HoldingTransport(base: HTTPTransport(), holdingAfter: 24 << 20)
        let library = try Library.open(at: folder.file("library"), transports: TransportRegistry([held]),
                                       configuration: Library.Configuration.split(connections: 4))
        let asset = try await library.addIssue(name: "issue", date: Date())
            .addAsset(AssetRequest(url: nginx.url("/first-slow/big.bin"), sha256: sha256Hex(data)))
        try await asset.download()
        try await eventually("24 MiB taken and the transfer held", seen: "\(held.bytesTaken) bytes") { held.isHolding }
        await library.close()
        let kept = try #require(await Library.openForReading(at: folder.file("library")).asset(identifier: asset.identifier)).totalBytesWritten
        // The progress count is every byte kept: the bytes without a gap, inside the first piece,
        // and the pieces the other connections wrote past the gap.
        #expect(kept > 16 << 20 && kept <= Int64(held.bytesTaken), "\(kept) kept of \(held.bytesTaken) taken")

        let again = try Library.open(at: folder.file("library"), transports: TransportRegistry([HTTPTransport()]),
                                     configuration: Library.Configuration.split(connections: 4))
        let delegate = RecordingDelegate()
        try await #require(again.asset(identifier: asset.identifier)).download(delegate: delegate)
        await delegate.waitForEnd()
        await again.close()

        #expect(delegate.deliveredSHA256 == sha256Hex(data), "\(delegate.events.suffix(3))")
        // The resume asks from the end of the bytes without a gap (when the first connection
        // wrote any), inside the first piece: `bytes=N-`, open-ended, N below 16 MiB.
        let continued = nginx.accessLog.compactMap { line -> Int64? in
            guard line.hasPrefix("206 \"bytes="), let range = line.split(separator: "\"").dropFirst().first, range.hasSuffix("-") else { return nil }
            return Int64(range.dropFirst("bytes=".count).dropLast())
        }
        #expect(continued.allSatisfy { $0 < 16 << 20 } && continued.count <= 1, "\(nginx.accessLog)")
    }

    /// A server of `version()` (its bytes and ETag) that holds the request without `Range` (the
    /// one that begins) after 1 MiB until `released` is, and answers ranges at once: the other
    /// connections write their pieces past a gap.
    private func pieceServer(_ version: @escaping @Sendable () -> (data: Data, etag: String), released: ThreadBarrier) throws -> FaultServer {
        try FaultServer { request in
            let (data, etag) = version()
            guard request.header("range") == nil else { return .serving(data, for: request, etag: etag) }
            return .serving(data, for: request, etag: etag, fault: .holdAfter(1 << 20, until: { released.wait() }))
        }
    }

    /// Stops (by closing the library) a split download of `url` once `limit` bytes reached the
    /// library. Returns the asset and the bytes the library took.
    func stopSplitDownload(_ url: URL, after limit: Int, sha256: String?) async throws -> (asset: String, taken: Int) {
        let held = HoldingTransport(base: HTTPTransport(), holdingAfter: limit)
        let library = try Library.open(at: folder.file("library"), transports: TransportRegistry([held]),
                                       configuration: Library.Configuration.split(connections: 4))
        let asset = try await library.addIssue(name: "issue", date: Date()).addAsset(AssetRequest(url: url, sha256: sha256))
        try await asset.download()
        try await eventually("\(limit) bytes taken and the transfer held", seen: "\(held.bytesTaken) bytes") { held.isHolding }
        await library.close()
        return (asset.identifier, held.bytesTaken)
    }

    /// Resumes the asset `identifier` over four connections through `transport`.
    func resumeSplitDownload(_ identifier: String, through transport: any Transport) async throws -> RecordingDelegate {
        let again = try Library.open(at: folder.file("library"), transports: TransportRegistry([transport]),
                                     configuration: Library.Configuration.split(connections: 4))
        let delegate = RecordingDelegate()
        try await #require(again.asset(identifier: identifier)).download(delegate: delegate)
        await delegate.waitForEnd()
        await again.close()
        return delegate
    }

    /// The pieces written past the gap before a stop are recorded with the bytes written without
    /// a gap: the resumed download asks only for the ranges missing, and takes no byte twice.
    @Test func aStoppedSplitDownloadFetchesOnlyTheMissingRangesAgain() async throws {
        let data = try await generated(size, seed: 427)
        let released = ThreadBarrier(parties: .max)
        let server = try pieceServer({ (data, "\"v1\"") }, released: released)
        defer {
            released.release()
            server.stop()
        }
        let (identifier, taken) = try await stopSplitDownload(server.url("/big.bin"), after: 40 << 20, sha256: sha256Hex(data))
        let before = server.requests.count

        let counting = HoldingTransport(base: HTTPTransport(), holdingAfter: .max)
        let delegate = try await resumeSplitDownload(identifier, through: counting)

        #expect(delegate.deliveredSHA256 == sha256Hex(data), "\(delegate.events.suffix(3))")
        // Every byte taken before the stop was made durable and recorded at the stop.
        #expect(counting.bytesTaken <= size - taken, "\(counting.bytesTaken) bytes taken again, \(taken) of \(size) were taken before the stop")
        // The ranges asked for lie in the gaps: the first request asks from the bytes without a
        // gap, open-ended (and stops at the first recorded piece), the others for pieces.
        let ranges = server.requests.dropFirst(before).compactMap { $0.header("range") }
        // (A piece halved for an idle connection is asked for again in part: counted once.)
        let asked = RangeSet(ranges.compactMap(Self.boundedRange)).ranges.reduce(0) { $0 + $1.count }
        #expect(asked <= size - taken, "\(asked) bytes asked in ranges, \(size - taken) missing: \(ranges)")
    }

    /// A resumed download whose source now serves another version fetches it all again, and
    /// keeps no recorded piece of the old one.
    @Test func aSplitDownloadResumedAgainstAnotherVersionFetchesEverything() async throws {
        let old = try await generated(size, seed: 428)
        let new = try await generated(size, seed: 429)
        let current = Mutex((data: old, etag: "\"v1\""))
        let released = ThreadBarrier(parties: .max)
        let server = try pieceServer({ current.withLock { $0 } }, released: released)
        defer {
            released.release()
            server.stop()
        }
        let (identifier, _) = try await stopSplitDownload(server.url("/big.bin"), after: 40 << 20, sha256: nil)
        current.withLock { $0 = (new, "\"v2\"") }
        released.release()

        let delegate = try await resumeSplitDownload(identifier, through: HTTPTransport())

        #expect(delegate.deliveredSHA256 == sha256Hex(new), "\(delegate.events.suffix(3))")
    }

    /// The range of a `Range` header `bytes=a-b`, when it has an end.
    static func boundedRange(_ header: String) -> Range<Int>? {
        guard header.hasPrefix("bytes=") else { return nil }
        let bounds = header.dropFirst(6).split(separator: "-", omittingEmptySubsequences: false)
        guard bounds.count == 2, let start = Int(bounds[0]), let end = Int(bounds[1]) else { return nil }
        return start..<(end + 1)
    }
}
