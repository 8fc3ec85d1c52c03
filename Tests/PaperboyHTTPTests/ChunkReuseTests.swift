import Foundation
import Paperboy
import PaperboyHTTP
import PaperboyTestServers
import PaperboyTesting
import Synchronization
import Testing

/// Indexed assets (docs/ChunkIndex.md) through the library and a real nginx: the bytes nginx
/// sends (its access log's `$body_bytes_sent`) are what the library fetched.
// A guard against hangs only: about 4 s alone, it went past a minute in a full run on a loaded
// 2-core machine (its nginx, zsyncmake and data generation queued behind the other suites').
@Suite("chunk reuse", .timeLimit(.minutes(3)))
struct ChunkReuseTests {
    /// Version 1 (4 MiB + a tail) and version 2: v1 with two 64 KiB regions rewritten.
    static var made: Task<(Data, Data), any Error> { IndexedVersions.made }

    /// The bytes the changed regions can cost: each region and a largest chunk on each side.
    static var changedBound: Int { IndexedVersions.changedBound }

    struct Setup {
        let nginx: NginxServer
        let folder: TempFolder
        let library: Library
        let issue: Paperboy.Issue

        var root: URL { folder.file("library") }
        /// Adds `request`, downloads it, and waits for its end.
        func deliver(_ request: AssetRequest) async throws -> AssetOutcome {
            let asset = try await issue.addAsset(request)
            try await asset.download()
            return try await asset.waitUntilFinished()
        }

        func delivered(_ path: String) -> Data? { try? Data(contentsOf: root.appendingPathComponent("Issues/issue/\(path)")) }
    }

    /// nginx serving v1, v2 and v2's index (`/v2.bin.pbidx`), and a library with one issue.
    func setUp(index: Data? = nil, transport: any Transport = HTTPTransport()) async throws -> Setup? {
        let (v1, v2) = try await Self.made.value
        let v2Index = try await offThePool { try Self.index(of: v2) }
        guard let nginx = try await startNginx(files: ["v1.bin": v1, "v2.bin": v2, "v2.bin.pbidx": index ?? v2Index]) else { return nil }
        let folder = TempFolder()
        let library = try Library.open(at: folder.file("library"), transports: TransportRegistry([transport]),
                                       configuration: .forTests(attempts: 1))
        let issue = try await library.addIssue(name: "issue", date: Date())
        return Setup(nginx: nginx, folder: folder, library: library, issue: issue)
    }

    static func index(of data: Data) throws -> Data { try IndexedVersions.index(of: data) }

    /// Bytes nginx sent in answers with `status` (206: ranges; 200: whole files) since log line `from`.
    func sent(_ nginx: NginxServer, status: Int, from: Int = 0) -> Int {
        nginx.accessLog.dropFirst(from).filter { $0.hasPrefix("\(status) ") }.compactMap { $0.split(separator: " ").last.flatMap { Int($0) } }
            .reduce(0, +)
    }

    @Test func aCorrectedVersionFetchesOnlyItsChangedChunks() async throws {
        let (v1, v2) = try await Self.made.value
        guard let setup = try await setUp() else { return }
        defer { setup.nginx.stop() }
        #expect(try await setup.deliver(AssetRequest(url: setup.nginx.url("/v1.bin"), sha256: sha256Hex(v1), destinationPath: "mag.pdf")) == .delivered)
        let before = setup.nginx.accessLog.count

        var request = AssetRequest(url: setup.nginx.url("/v2.bin"), sha256: sha256Hex(v2), destinationPath: "mag.pdf")
        request.index = setup.nginx.url("/v2.bin.pbidx")
        let outcome = try await setup.deliver(request)
        let status = try setup.issue.assetStatuses.first { $0.request.url == request.url }
        await setup.library.close()

        #expect(outcome == .delivered)
        #expect(setup.delivered("mag.pdf").map(sha256Hex) == sha256Hex(v2))
        let ranged = sent(setup.nginx, status: 206, from: before)
        #expect(ranged > 0, "\(setup.nginx.accessLog)")
        // What the API tells of it: the bytes not fetched were reused.
        #expect(status?.bytesReused == Int64(v2.count - ranged), "\(String(describing: status))")
        #expect(ranged <= Self.changedBound, "\(setup.nginx.accessLog.dropFirst(before))")
        // Only the index came whole.
        let whole = setup.nginx.accessLog.dropFirst(before).filter { $0.hasPrefix("200 ") }
        #expect(whole.count == 1 && sent(setup.nginx, status: 200, from: before) < 8 << 10, "\(whole)")
    }

    @Test func aCopiedChunkThatChangedOnDiskIsFetched() async throws {
        let (v1, v2) = try await Self.made.value
        guard let setup = try await setUp() else { return }
        defer { setup.nginx.stop() }
        #expect(try await setup.deliver(AssetRequest(url: setup.nginx.url("/v1.bin"), sha256: sha256Hex(v1), destinationPath: "mag.pdf")) == .delivered)
        let before = setup.nginx.accessLog.count
        // The delivered file is planned from as it is, then damaged before its chunks are copied:
        // here, damaged before, as a disk might between the plan and the copy, in a region the
        // plan copies: the chunk is fetched, not copied.
        let handle = try FileHandle(forWritingTo: setup.root.appendingPathComponent("Issues/issue/mag.pdf"))
        try handle.seek(toOffset: 2_000_000)
        try handle.write(contentsOf: Data(repeating: 0xA5, count: 3))
        try handle.close()

        var request = AssetRequest(url: setup.nginx.url("/v2.bin"), sha256: sha256Hex(v2), destinationPath: "mag.pdf")
        request.index = setup.nginx.url("/v2.bin.pbidx")
        let outcome = try await setup.deliver(request)
        await setup.library.close()

        #expect(outcome == .delivered)
        #expect(setup.delivered("mag.pdf").map(sha256Hex) == sha256Hex(v2))
        let ranged = sent(setup.nginx, status: 206, from: before)
        // The damaged chunk (at most a largest chunk) costs beyond the changed ones.
        #expect(ranged > 0 && ranged <= Self.changedBound + (128 << 10), "\(setup.nginx.accessLog.dropFirst(before))")
    }

    @Test func withoutAPreviousVersionEveryChunkIsFetchedAsRanges() async throws {
        let (_, v2) = try await Self.made.value
        guard let setup = try await setUp() else { return }
        defer { setup.nginx.stop() }
        var request = AssetRequest(url: setup.nginx.url("/v2.bin"), sha256: sha256Hex(v2), destinationPath: "mag.pdf")
        request.index = setup.nginx.url("/v2.bin.pbidx")
        let outcome = try await setup.deliver(request)
        await setup.library.close()
        #expect(outcome == .delivered)
        #expect(setup.delivered("mag.pdf").map(sha256Hex) == sha256Hex(v2))
        #expect(sent(setup.nginx, status: 206) == v2.count)
    }

    /// Ways an index is broken or hostile.
    enum Damage: String, CaseIterable, Sendable {
        case countAboveSize = "a chunk count above the file's size allows"
        case lengthsNotAddingUp = "lengths not adding up to the file's size"
        case aboveBound = "an index above its bound"

        func apply(to index: Data) -> Data {
            var bad = index
            switch self {
            case .countAboveSize:
                bad.replaceSubrange(58..<66, with: withUnsafeBytes(of: UInt64(1 << 40).bigEndian) { Data($0) })
            case .lengthsNotAddingUp:
                // The file's size, one byte more.
                let size = index[18..<26].reduce(UInt64(0)) { $0 << 8 | UInt64($1) } + 1
                bad.replaceSubrange(18..<26, with: withUnsafeBytes(of: size.bigEndian) { Data($0) })
            case .aboveBound:
                bad = Data(count: 10 << 20)
            }
            return bad
        }
    }

    /// Hostile or broken indexes: refused, with an error naming the index's URL; nothing fetched.
    @Test(arguments: Damage.allCases)
    func aHostileIndexFailsTheAssetNamingTheIndex(_ damage: Damage) async throws {
        let name = damage.rawValue
        let (_, v2) = try await Self.made.value
        let good = try await offThePool { try Self.index(of: v2) }
        guard let setup = try await setUp(index: damage.apply(to: good)) else { return }
        defer { setup.nginx.stop() }
        var request = AssetRequest(url: setup.nginx.url("/v2.bin"), sha256: sha256Hex(v2), destinationPath: "mag.pdf")
        let indexURL = setup.nginx.url("/v2.bin.pbidx")
        request.index = indexURL
        let outcome = try await setup.deliver(request)
        await setup.library.close()
        guard case .failed(let error) = outcome else {
            Testing.Issue.record("\(name): expected a failure, got \(outcome)")
            return
        }
        #expect(error.message.contains(indexURL.absoluteString as String), "\(name): \(error.message)")
        #expect(sent(setup.nginx, status: 206) == 0, "\(name)")
        #expect(setup.delivered("mag.pdf") == nil)
    }

    /// Which ranged answers get one byte flipped.
    enum Corruption { case firstRange, everyRange }

    @Test(arguments: [Corruption.firstRange, .everyRange])
    func aBadFetchedChunkIsFetchedAgainAloneAndFailsTheAssetIfItStaysBad(_ corruption: Corruption) async throws {
        let (_, v2) = try await Self.made.value
        guard let setup = try await setUp(transport: CorruptingTransport(base: HTTPTransport(), corruption: corruption)) else { return }
        defer { setup.nginx.stop() }
        var request = AssetRequest(url: setup.nginx.url("/v2.bin"), sha256: sha256Hex(v2), destinationPath: "mag.pdf")
        request.index = setup.nginx.url("/v2.bin.pbidx")
        let outcome = try await setup.deliver(request)
        await setup.library.close()
        // The flipped byte is the 1001st of the first range: in the first chunk.
        let index = try ChunkIndex.decode(Self.index(of: v2), from: "test", limits: .init(maxFileSize: 1 << 30))
        let first = index.chunks[0]
        let alone = "206 \"bytes=0-\(first.length - 1)\""
        switch corruption {
        case .firstRange:
            #expect(outcome == .delivered)
            #expect(setup.delivered("mag.pdf").map(sha256Hex) == sha256Hex(v2))
            #expect(setup.nginx.accessLog.contains { $0.hasPrefix(alone) }, "\(setup.nginx.accessLog)")
        case .everyRange:
            guard case .failed(let error) = outcome else {
                Testing.Issue.record("expected a failure, got \(outcome)")
                return
            }
            #expect(error.message.contains("chunk 0 (bytes 0-\(first.length - 1))"), "\(error.message)")
            #expect(error.message.contains("/v2.bin") && error.message.contains("/v2.bin.pbidx"), "\(error.message)")
            #expect(setup.nginx.accessLog.filter { $0.hasPrefix(alone) }.count == ChunkedTransferRefetches.count)
        }
    }

    /// An indexed download of v2 from `/slow/v2.bin`, stopped after about 1 MiB: the asset's
    /// identifier and the bytes its partial file keeps (whole chunks).
    func interrupted(_ setup: Setup) async throws -> (identifier: String, kept: Int64) {
        let (_, v2) = try await Self.made.value
        await setup.library.close()
        let held = HoldingTransport(base: HTTPTransport(), holdingAfter: 1 << 20)
        let library = try Library.open(at: setup.root, transports: TransportRegistry([held]), configuration: .forTests(attempts: 1))
        var request = AssetRequest(url: setup.nginx.url("/slow/v2.bin"), sha256: sha256Hex(v2), destinationPath: "mag.pdf")
        request.index = setup.nginx.url("/v2.bin.pbidx")
        let asset = try await #require(library.issue(named: "issue")).addAsset(request)
        try await asset.download()
        try await eventually("1 MiB fetched and the transfer held", seen: "\(held.bytesTaken) bytes, state \(asset.state)") { held.isHolding }
        await library.close()
        let kept = try #require(await Library.openForReading(at: setup.root).asset(identifier: asset.identifier)).totalBytesWritten
        #expect(kept > 0 && kept < Int64(v2.count))
        // Whole verified chunks only.
        #expect(try await Self.v2Index().chunks.contains { $0.offset == kept }, "\(kept) bytes kept")
        return (asset.identifier, kept)
    }

    static func v2Index() async throws -> ChunkIndex {
        let (_, v2) = try await Self.made.value
        return try ChunkIndex.decode(index(of: v2), from: "test", limits: .init(maxFileSize: 1 << 30))
    }

    /// Opens the library again with `transport` and `configuration`, downloads asset `identifier`
    /// to its end, and shows the library to `inspect` before closing it.
    func resume(_ identifier: String, _ setup: Setup, transport: any Transport = HTTPTransport(),
                configuration: Library.Configuration = .forTests(attempts: 1), inspect: (Library) -> Void = { _ in }) async throws -> AssetOutcome {
        let library = try Library.open(at: setup.root, transports: TransportRegistry([transport]), configuration: configuration)
        let resumed = try #require(await library.asset(identifier: identifier))
        try await resumed.download()
        let outcome = try await resumed.waitUntilFinished()
        inspect(library)
        await library.close()
        return outcome
    }

    @Test func anInterruptedIndexedDownloadResumesAtAChunk() async throws {
        let (_, v2) = try await Self.made.value
        guard let setup = try await setUp() else { return }
        defer { setup.nginx.stop() }
        let (identifier, kept) = try await interrupted(setup)
        let before = setup.nginx.accessLog.count
        let outcome = try await resume(identifier, setup)
        #expect(outcome == .delivered)
        #expect(setup.delivered("mag.pdf").map(sha256Hex) == sha256Hex(v2))
        // Only what was not kept is fetched again: the kept bytes are whole chunks.
        #expect(sent(setup.nginx, status: 206, from: before) == v2.count - Int(kept), "\(setup.nginx.accessLog.dropFirst(before))")
    }

    /// Which chunks of a kept partial file get one byte flipped.
    enum Flips: CaseIterable { case threeChunks, lastKeptChunk }

    /// Flips the byte in the middle of each of `chunks` in the partial file of `identifier`.
    func flip(_ chunks: [ChunkIndex.Chunk], ofAsset identifier: String, _ setup: Setup) throws {
        let file = try FileHandle(forUpdating: setup.root.appendingPathComponent(".partial/\(identifier)"))
        defer { try? file.close() }
        for chunk in chunks {
            let offset = UInt64(chunk.offset) + UInt64(chunk.length / 2)
            try file.seek(toOffset: offset)
            let read = try file.read(upToCount: 1)
            let byte = try #require(read?.first)
            try file.seek(toOffset: offset)
            try file.write(contentsOf: Data([byte ^ 0x5A]))
        }
    }

    @Test(arguments: Flips.allCases)
    func aResumedPartialWithFlippedBytesFetchesOnlyTheirChunksAgain(_ flips: Flips) async throws {
        let (_, v2) = try await Self.made.value
        guard let setup = try await setUp() else { return }
        defer { setup.nginx.stop() }
        let (identifier, kept) = try await interrupted(setup)
        let keptChunks = try await Self.v2Index().chunks.filter { $0.offset < kept }
        let damaged = switch flips {
        case .threeChunks: [keptChunks[1], keptChunks[keptChunks.count / 2], keptChunks[keptChunks.count - 2]]
        case .lastKeptChunk: [keptChunks[keptChunks.count - 1]]
        }
        try flip(damaged, ofAsset: identifier, setup)
        let before = setup.nginx.accessLog.count
        let outcome = try await resume(identifier, setup)
        #expect(outcome == .delivered)
        #expect(setup.delivered("mag.pdf").map(sha256Hex) == sha256Hex(v2))
        // Each damaged chunk alone, then the rest: not the whole file again.
        let log = Array(setup.nginx.accessLog.dropFirst(before))
        for chunk in damaged {
            #expect(log.contains { $0.hasPrefix("206 \"bytes=\(chunk.offset)-\(chunk.offset + Int64(chunk.length) - 1)\"") }, "\(log)")
        }
        #expect(sent(setup.nginx, status: 206, from: before) == v2.count - Int(kept) + damaged.map(\.length).reduce(0, +), "\(log)")
        #expect(sent(setup.nginx, status: 200, from: before) <= 64 << 10, "only the index is fetched whole: \(log)")
    }

    /// A repaired chunk and the index are fetched bytes like the others: they pass the bandwidth
    /// limits (the global limiter grants every byte nginx sent, and would make them wait).
    @Test func repairedChunksAndTheIndexPassTheBandwidthLimits() async throws {
        let (_, v2) = try await Self.made.value
        guard let setup = try await setUp() else { return }
        defer { setup.nginx.stop() }
        let (identifier, kept) = try await interrupted(setup)
        let keptChunks = try await Self.v2Index().chunks.filter { $0.offset < kept }
        let damaged = [keptChunks[1], keptChunks[keptChunks.count - 1]]
        try flip(damaged, ofAsset: identifier, setup)
        let before = setup.nginx.accessLog.count
        var configuration = Library.Configuration.forTests(attempts: 1)
        // A limit, so that each byte is asked of the limiter; high enough to cost milliseconds.
        configuration.bandwidthLimit = 1 << 30
        var granted: Int64 = -1
        let outcome = try await resume(identifier, setup, configuration: configuration) { granted = $0.bandwidthLimiter.statistics.bytesGranted }
        #expect(outcome == .delivered)
        #expect(setup.delivered("mag.pdf").map(sha256Hex) == sha256Hex(v2))
        let log = Array(setup.nginx.accessLog.dropFirst(before))
        let ranged = sent(setup.nginx, status: 206, from: before)
        let index = sent(setup.nginx, status: 200, from: before)
        #expect(ranged == v2.count - Int(kept) + damaged.map(\.length).reduce(0, +), "\(log)")
        #expect(index > 0, "\(log)")
        #expect(granted == Int64(ranged + index), "granted \(granted) of \(ranged) ranged bytes (\(damaged.map(\.length)) repaired) and a \(index)-byte index")
    }

    @Test func aWholeFileMismatchChecksTheChunksAndFetchesNoneOfTheGoodOnesAgain() async throws {
        let (_, v2) = try await Self.made.value
        // Every chunk's SHA-256 is right, the whole file's (bytes 26-57 of the header) is not.
        var index = try Self.index(of: v2)
        index[26] ^= 0xFF
        let claimed = try ChunkIndex.decode(index, from: "test", limits: .init(maxFileSize: 1 << 30)).sha256.description
        guard let setup = try await setUp(index: index) else { return }
        defer { setup.nginx.stop() }
        var request = AssetRequest(url: setup.nginx.url("/v2.bin"), sha256: claimed, destinationPath: "mag.pdf")
        request.index = setup.nginx.url("/v2.bin.pbidx")
        let outcome = try await setup.deliver(request)
        await setup.library.close()
        guard case .failed(let error) = outcome else {
            Testing.Issue.record("expected a failure, got \(outcome)")
            return
        }
        #expect(error.code == .checksumMismatch)
        #expect(error.message.contains("its chunks checked against") && error.message.contains("/v2.bin.pbidx"), "\(error.message)")
        // The chunks were checked on disk, not fetched again.
        #expect(sent(setup.nginx, status: 206) == v2.count, "\(setup.nginx.accessLog)")
        #expect(setup.delivered("mag.pdf") == nil)
    }

    @Test func aPartialChunkTheSourceKeepsServingWrongFailsTheAssetNamingIt() async throws {
        guard let setup = try await setUp() else { return }
        defer { setup.nginx.stop() }
        let (identifier, _) = try await interrupted(setup)
        let first = try await Self.v2Index().chunks[0]
        try flip([first], ofAsset: identifier, setup)
        let before = setup.nginx.accessLog.count
        // Every answer from byte 0 comes with its 1001st byte flipped.
        let outcome = try await resume(identifier, setup, transport: CorruptingTransport(base: HTTPTransport(), corruption: .everyRange))
        guard case .failed(let error) = outcome else {
            Testing.Issue.record("expected a failure, got \(outcome)")
            return
        }
        #expect(error.message.contains("chunk 0 (bytes 0-\(first.length - 1))"), "\(error.message)")
        #expect(error.message.contains("/slow/v2.bin") && error.message.contains("/v2.bin.pbidx"), "\(error.message)")
        // Fetched alone, then again alone as often as a bad chunk is; nothing else from the source.
        let log = Array(setup.nginx.accessLog.dropFirst(before))
        #expect(log.filter { $0.hasPrefix("206 \"bytes=0-\(first.length - 1)\"") }.count == 1 + ChunkedTransferRefetches.count, "\(log)")
        #expect(sent(setup.nginx, status: 206, from: before) == (1 + ChunkedTransferRefetches.count) * first.length, "\(log)")
        #expect(setup.delivered("mag.pdf") == nil)
    }
}

/// How often ``ChunkedTransfer`` fetches a chunk again alone when it stays bad (docs/ChunkIndex.md).
enum ChunkedTransferRefetches {
    static let count = 2
}

/// The real HTTP transport, with one byte of ranged answers flipped on their way to the library.
final class CorruptingTransport: Transport, Sendable {
    let base: any Transport
    let corruption: ChunkReuseTests.Corruption
    private let ranges = Mutex(0)

    init(base: any Transport, corruption: ChunkReuseTests.Corruption) {
        self.base = base
        self.corruption = corruption
    }

    var schemes: Set<String> { base.schemes }
    var capabilities: TransportCapabilities { base.capabilities }

    func transfer(_ job: TransferJob, into sink: any TransferSink) async throws {
        guard job.rangeEnd != nil else { return try await base.transfer(job, into: sink) }
        let count = ranges.withLock { count -> Int in
            count += 1
            return count
        }
        guard corruption == .everyRange || count == 1, job.offset == 0 else { return try await base.transfer(job, into: sink) }
        try await base.transfer(job, into: FlippingSink(base: sink, at: 1000))
    }
}

/// Forwards to `base`, with the byte at `at` of the body flipped.
final class FlippingSink: TransferSink, @unchecked Sendable {
    let base: any TransferSink
    let at: Int
    private var position = 0

    init(base: any TransferSink, at: Int) {
        self.base = base
        self.at = at
    }

    func begin(_ response: TransferResponse) throws { try base.begin(response) }

    private func flipped(_ bytes: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer) throws -> Bool) rethrows -> Bool {
        guard at >= position, at < position + bytes.count else {
            let taken = try body(bytes)
            if taken { position += bytes.count }
            return taken
        }
        var copy = [UInt8](bytes)
        copy[at - position] ^= 0xFF
        let taken = try copy.withUnsafeBytes { try body($0) }
        if taken { position += bytes.count }
        return taken
    }

    func write(_ bytes: UnsafeRawBufferPointer) async throws {
        var copy = [UInt8](bytes)
        if at >= position, at < position + bytes.count { copy[at - position] ^= 0xFF }
        position += bytes.count
        try await base.write(Data(copy))
    }

    func tryWrite(_ bytes: UnsafeRawBufferPointer) throws -> Bool { try flipped(bytes) { try base.tryWrite($0) } }
    func whenWritable(_ callback: @escaping @Sendable () -> Void) { base.whenWritable(callback) }
    func challenge(_ challenge: AuthChallenge) async -> AuthChallengeDisposition { await base.challenge(challenge) }
}
