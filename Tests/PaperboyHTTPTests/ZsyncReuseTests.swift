import Foundation
import Paperboy
import PaperboyHTTP
import PaperboyTestServers
import PaperboyTesting
import Testing

/// Assets indexed by a zsync control file (docs/ChunkIndex.md, "zsync control files") through the
/// library and a real nginx, with control files `zsyncmake` writes at test time: the bytes nginx
/// sends (its access log's `$body_bytes_sent`) are what the library fetched.
// A guard against hangs only: about 4 s alone, it went past a minute in a full run on a loaded
// 2-core machine (its nginx, zsyncmake and data generation queued behind the other suites').
@Suite("zsync reuse", .timeLimit(.minutes(3)))
struct ZsyncReuseTests {
    /// Version 1 (4 MiB and a tail) and a corrected version 2: v1 with two 64 KiB regions rewritten
    /// and 100,000 bytes inserted between them.
    static let made = Task { () -> (Data, Data) in
        let (v1, _) = try await IndexedVersions.made.value
        return try await offThePool { Self.corrected(v1) }
    }

    static func corrected(_ v1: Data) -> (Data, Data) {
        var v2 = v1
        let patch = randomData(128 << 10, seed: 77)
        v2.replaceSubrange(1_000_000..<1_000_000 + (64 << 10), with: patch.prefix(64 << 10))
        v2.insert(contentsOf: randomData(100_000, seed: 78), at: 2_000_000)
        v2.replaceSubrange(3_000_000..<3_000_000 + (64 << 10), with: patch.suffix(64 << 10))
        return (v1, v2)
    }

    /// The bytes the edits changed.
    static let changed = 2 * (64 << 10) + 100_000

    struct Setup {
        let nginx: NginxServer
        let folder: TempFolder
        let library: Library
        let issue: Paperboy.Issue

        func deliver(_ request: AssetRequest) async throws -> AssetOutcome {
            let asset = try await issue.addAsset(request)
            try await asset.download()
            return try await asset.waitUntilFinished()
        }

        func delivered(_ path: String) -> Data? { try? Data(contentsOf: folder.file("library").appendingPathComponent("Issues/issue/\(path)")) }

        /// Bytes nginx sent in answers with `status` (206: ranges; 200: whole files) since log line `from`.
        func sent(status: Int, from: Int = 0) -> Int {
            nginx.accessLog.dropFirst(from).filter { $0.hasPrefix("\(status) ") }.compactMap { $0.split(separator: " ").last.flatMap { Int($0) } }
                .reduce(0, +)
        }

        /// v1 delivered to `mag.pdf`, then `name` with its control file `name.zsync`: the outcome, its
        /// status, and the access log's length before it.
        func correct(to name: String, sha256: String?) async throws -> (outcome: AssetOutcome, status: AssetStatus?, before: Int) {
            let (v1, _) = try await ZsyncReuseTests.made.value
            #expect(try await deliver(AssetRequest(url: nginx.url("/v1.bin"), sha256: sha256Hex(v1), destinationPath: "mag.pdf")) == .delivered)
            let before = nginx.accessLog.count
            var request = AssetRequest(url: nginx.url("/\(name)"), sha256: sha256, destinationPath: "mag.pdf")
            request.index = nginx.url("/\(name).zsync")
            let outcome = try await deliver(request)
            let status = try issue.assetStatuses.first { $0.request.url == request.url }
            await library.close()
            return (outcome, status, before)
        }
    }

    /// nginx serving v1 and `files`, and a library with one issue; nil when nginx or zsyncmake is
    /// missing (outside CI).
    func setUp(_ files: [String: Data]) async throws -> Setup? {
        let (v1, _) = try await Self.made.value
        guard let nginx = try await startNginx(files: files.merging(["v1.bin": v1]) { first, _ in first }) else { return nil }
        let folder = TempFolder()
        let library = try Library.open(at: folder.file("library"), transports: TransportRegistry([HTTPTransport()]),
                                       configuration: .forTests(attempts: 1))
        let issue = try await library.addIssue(name: "issue", date: Date())
        return Setup(nginx: nginx, folder: folder, library: library, issue: issue)
    }

    static func controlFile(for data: Data) async throws -> Data? {
        try await offThePool { try Zsyncmake.controlFile(for: data) }
    }

    @Test func aCorrectedVersionFetchesAboutItsChangedBlocks() async throws {
        let (_, v2) = try await Self.made.value
        guard let control = try await Self.controlFile(for: v2), let setup = try await setUp(["v2.bin": v2, "v2.bin.zsync": control]) else { return }
        defer { setup.nginx.stop() }
        let (outcome, status, before) = try await setup.correct(to: "v2.bin", sha256: sha256Hex(v2))
        #expect(outcome == .delivered)
        #expect(setup.delivered("mag.pdf") == v2)
        let ranged = setup.sent(status: 206, from: before)
        // zsyncmake's 2 KiB blocks here: each of the three edits costs its bytes and a few blocks around it.
        #expect(ranged >= Self.changed && ranged <= Self.changed + 3 * 4 * 2048, "\(ranged) bytes in ranges: \(setup.nginx.accessLog.dropFirst(before))")
        #expect(status?.bytesReused == Int64(v2.count - ranged), "\(String(describing: status))")
        // Only the control file came whole.
        let whole = setup.nginx.accessLog.dropFirst(before).filter { $0.hasPrefix("200 ") }
        #expect(whole.count == 1 && setup.sent(status: 200, from: before) == control.count, "\(whole)")
    }

    @Test func anUnchangedVersionFetchesNoBodyBytes() async throws {
        let (v1, _) = try await Self.made.value
        guard let control = try await Self.controlFile(for: v1), let setup = try await setUp(["same.bin": v1, "same.bin.zsync": control]) else { return }
        defer { setup.nginx.stop() }
        let (outcome, status, before) = try await setup.correct(to: "same.bin", sha256: sha256Hex(v1))
        #expect(outcome == .delivered)
        #expect(setup.delivered("mag.pdf") == v1)
        #expect(setup.sent(status: 206, from: before) == 0, "\(setup.nginx.accessLog.dropFirst(before))")
        #expect(setup.sent(status: 200, from: before) == control.count)
        #expect(status?.bytesReused == Int64(v1.count))
    }

    /// A download by a control file (no previous version: every block fetched), stopped after
    /// about 1 MiB, keeps whole blocks; with one byte of a kept block flipped, the resumed download
    /// checks the kept blocks by their MD4, fetches that block again alone, then the rest.
    @Test func anInterruptedDownloadResumesAtABlockAndFetchesAFlippedBlockAlone() async throws {
        let (_, v2) = try await Self.made.value
        guard let control = try await Self.controlFile(for: v2), let setup = try await setUp(["v2.bin": v2, "v2.bin.zsync": control]) else { return }
        defer { setup.nginx.stop() }
        await setup.library.close()
        let root = setup.folder.file("library")
        let held = HoldingTransport(base: HTTPTransport(), holdingAfter: 1 << 20)
        let library = try Library.open(at: root, transports: TransportRegistry([held]), configuration: .forTests(attempts: 1))
        var request = AssetRequest(url: setup.nginx.url("/slow/v2.bin"), sha256: sha256Hex(v2), destinationPath: "mag.pdf")
        request.index = setup.nginx.url("/v2.bin.zsync")
        let asset = try await #require(library.issue(named: "issue")).addAsset(request)
        try await asset.download()
        try await eventually("1 MiB fetched and the transfer held", seen: "\(held.bytesTaken) bytes, state \(asset.state)") { held.isHolding }
        await library.close()
        let kept = try #require(await Library.openForReading(at: root).asset(identifier: asset.identifier)).totalBytesWritten
        // Whole blocks of zsyncmake's 2 KiB.
        #expect(kept > 20 << 10 && kept < Int64(v2.count) && kept % 2048 == 0, "\(kept) bytes kept")

        let block = 5
        let file = try FileHandle(forUpdating: root.appendingPathComponent(".partial/\(asset.identifier)"))
        try file.seek(toOffset: UInt64(block * 2048 + 100))
        try file.write(contentsOf: Data([v2[block * 2048 + 100] ^ 0x5A]))
        try file.close()

        let before = setup.nginx.accessLog.count
        let reopened = try Library.open(at: root, transports: TransportRegistry([HTTPTransport()]), configuration: .forTests(attempts: 1))
        let resumed = try #require(await reopened.asset(identifier: asset.identifier))
        try await resumed.download()
        let outcome = try await resumed.waitUntilFinished()
        await reopened.close()
        #expect(outcome == .delivered)
        #expect(setup.delivered("mag.pdf") == v2)
        let log = Array(setup.nginx.accessLog.dropFirst(before))
        #expect(log.contains { $0.hasPrefix("206 \"bytes=\(block * 2048)-\(block * 2048 + 2047)\"") }, "\(log)")
        #expect(setup.sent(status: 206, from: before) == v2.count - Int(kept) + 2048, "\(log)")
    }

    /// Ways a served control file lies or breaks.
    enum Damage: String, CaseIterable, Sendable {
        case blockCountLies = "a Length announcing more blocks than the checksums hold"
        case lengthMismatch = "a Length within the same blocks, one byte short of the file"
        case badHashLengths = "Hash-Lengths out of range"
        case truncatedChecksums = "checksums cut short"
        case wrongSHA1 = "a SHA-1 not the file's"

        func apply(to control: Data) -> Data {
            let end = control.range(of: Data("\n\n".utf8))!.lowerBound + 2
            var header = String(decoding: control[..<end], as: UTF8.self)
            var body = control[end...]
            let length = Int(header.components(separatedBy: "\n").first { $0.hasPrefix("Length: ") }!.dropFirst("Length: ".count))!
            switch self {
            case .blockCountLies: header = header.replacingOccurrences(of: "Length: \(length)\n", with: "Length: \(length + 100_000)\n")
            case .lengthMismatch: header = header.replacingOccurrences(of: "Length: \(length)\n", with: "Length: \(length - 1)\n")
            case .badHashLengths:
                header = header.split(separator: "\n", omittingEmptySubsequences: false)
                    .map { $0.hasPrefix("Hash-Lengths: ") ? "Hash-Lengths: 3,2,3" : String($0) }.joined(separator: "\n")
            case .truncatedChecksums: body = body.dropLast(5)
            case .wrongSHA1:
                header = header.split(separator: "\n", omittingEmptySubsequences: false)
                    .map { $0.hasPrefix("SHA-1: ") ? "SHA-1: " + String(repeating: "0", count: 40) : String($0) }.joined(separator: "\n")
            }
            return Data(header.utf8) + body
        }
    }

    /// Hostile or broken control files: the asset fails with an error naming the control file's
    /// URL, and nothing is delivered.
    @Test(arguments: Damage.allCases)
    func aHostileControlFileFailsTheAssetNamingIt(_ damage: Damage) async throws {
        let (_, v2) = try await Self.made.value
        guard let control = try await Self.controlFile(for: v2),
              let setup = try await setUp(["v2.bin": v2, "v2.bin.zsync": damage.apply(to: control)]) else { return }
        defer { setup.nginx.stop() }
        // No sha256 of its own: the control file's SHA-1 is the last word on the file.
        let (outcome, _, _) = try await setup.correct(to: "v2.bin", sha256: nil)
        guard case .failed(let error) = outcome else {
            Testing.Issue.record("\(damage.rawValue): expected a failure, got \(outcome)")
            return
        }
        #expect(error.message.contains(setup.nginx.url("/v2.bin.zsync").absoluteString), "\(damage.rawValue): \(error.message)")
        #expect(setup.delivered("mag.pdf").map(sha256Hex) != sha256Hex(v2), "\(damage.rawValue)")
    }
}
