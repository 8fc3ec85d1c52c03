import Crypto
import Foundation
@testable import Paperboy
import PaperboyTestServers
import PaperboyTesting
import Testing

/// ``ZsyncIndex``: control files `zsyncmake` writes at test time are read as it meant them;
/// hostile ones are refused naming the file and the line; a rolling match against a seed finds
/// the blocks the seed holds.
@Suite("zsync control files", .timeLimit(.minutes(1)))
struct ZsyncIndexTests {
    let folder = TempFolder()
    static let limits = ZsyncIndex.Limits(maxFileSize: 1 << 30, maxBlocks: 1 << 20)

    /// 300,000 random bytes (a short last block) and their control file, by `zsyncmake`.
    static let made = Task { try await offThePool { () -> (Data, Data)? in
        let data = randomData(300_000, seed: 29)
        return try Zsyncmake.controlFile(for: data).map { (data, $0) }
    } }

    @Test func aControlFileIsReadAsZsyncmakeMeantIt() async throws {
        guard let (data, control) = try await Self.made.value else { return }
        let index = try ZsyncIndex.decode(control, from: "v.zsync", limits: Self.limits)
        #expect(index.fileSize == Int64(data.count))
        #expect(index.blockSize == 2048)
        #expect(index.blockCount == (data.count + 2047) / 2048)
        #expect(index.sha1 == Array(Insecure.SHA1.hash(data: data)))
        #expect((1...2).contains(index.sequenceMatches) && (2...4).contains(index.rsumBytes) && (3...16).contains(index.checksumBytes))
        data.withUnsafeBytes { bytes in
            for block in 0..<index.blockCount {
                let start = Int(index.offset(ofPiece: block))
                let piece = UnsafeRawBufferPointer(rebasing: bytes[start..<start + index.length(ofPiece: block)])
                #expect(index.piece(block, matches: piece), "block \(block)")
                let sum = ZsyncIndex.rsum(piece, blockSize: index.blockSize)
                #expect(index.rsums[block] == (UInt32(sum.a) & index.rsumAMask) << 16 | UInt32(sum.b), "block \(block)")
            }
            // One byte changed: the block no longer matches.
            var changed = Array(bytes[0..<2048])
            changed[100] ^= 1
            #expect(!changed.withUnsafeBytes { index.piece(0, matches: $0) })
        }
        #expect(index.validator.value == "zsync-sha1:" + index.sha1Hex)
    }

    /// Ways a control file lies or breaks: each refused, naming the file (and the line, for a
    /// header line).
    enum Damage: String, CaseIterable, Sendable {
        case blockCountLies = "a Length announcing more blocks than the checksums hold"
        case fewerBlocks = "a Length announcing fewer blocks than the checksums hold"
        case truncatedChecksums = "checksums cut short"
        case badHashLengths = "Hash-Lengths out of range"
        case hashLengthsNotNumbers = "Hash-Lengths not numbers"
        case blockSizeNotPowerOfTwo = "a block size not a power of two"
        case hugeBlockSize = "a block size above the bound"
        case noSHA1 = "no SHA-1"
        case noBlankLine = "no empty line after the header"
        case notZsync = "not a control file"
        case aboveTheBlockLimit = "more blocks than the limit"
        case longHeader = "a header above its bound"

        /// The damaged control file, and the header line the error names (if any).
        func apply(to control: Data) -> (Data, line: Int?) {
            let end = control.range(of: Data("\n\n".utf8))!.lowerBound + 2
            var lines = String(decoding: control[..<end], as: UTF8.self).components(separatedBy: "\n").dropLast(2).map { $0 }
            var body = control[end...]
            func line(_ name: String) -> Int { lines.firstIndex { $0.hasPrefix(name + ": ") }! }
            func set(_ name: String, _ value: String) -> Int {
                let at = line(name)
                lines[at] = name + ": " + value
                return at + 1
            }
            let length = Int(lines[line("Length")].dropFirst("Length: ".count))!
            var named: Int?
            switch self {
            case .blockCountLies: _ = set("Length", String(length + 4096))
            case .fewerBlocks: _ = set("Length", String(length - 4096))
            case .truncatedChecksums: body = body.dropLast(3)
            case .badHashLengths: named = set("Hash-Lengths", "2,2,17")
            case .hashLengthsNotNumbers: named = set("Hash-Lengths", "two,2,4")
            case .blockSizeNotPowerOfTwo: named = set("Blocksize", "3000")
            case .hugeBlockSize: named = set("Blocksize", String(1 << 30))
            case .noSHA1: lines.remove(at: line("SHA-1"))
            case .noBlankLine: return (Data(lines.joined(separator: "\n").utf8) + Data("\n".utf8), nil)
            case .notZsync: return (Data("PBIDX".utf8) + control, nil)
            case .aboveTheBlockLimit: _ = set("Length", String(1 << 29))
            case .longHeader: lines.insert("X-Padding: " + String(repeating: "x", count: 20_000), at: 1)
            }
            return (Data((lines.joined(separator: "\n") + "\n\n").utf8) + body, named)
        }
    }

    @Test(arguments: Damage.allCases)
    func aHostileControlFileIsRefusedNamingItAndTheLine(_ damage: Damage) async throws {
        guard let (_, control) = try await Self.made.value else { return }
        let (bad, line) = damage.apply(to: control)
        let limits = ZsyncIndex.Limits(maxFileSize: 1 << 30, maxBlocks: 1 << 16)
        #expect {
            try ZsyncIndex.decode(bad, from: "https://cdn.example.com/v.zsync", limits: limits)
        } throws: { error in
            let text = "\(error)"
            return text.hasPrefix("zsync control file https://cdn.example.com/v.zsync: ")
                && (line.map { text.contains("line \($0): ") } ?? true)
        }
    }

    /// Bytes no control file has: refused, never trapping (the fuzz target's promise, on a few).
    @Test func garbageIsRefused() {
        for garbage in [Data(), Data("zsync".utf8), Data("zsync: 1\n\n".utf8), Data("zsync: 1\nBlocksize: 2048\nLength: 1\nSHA-1: x\n\n".utf8),
                        Data("zsync: 1\nLength: 99999999999999999999999\n\n".utf8), Data("zsync: 1\nno separator\n\n".utf8)] {
            #expect(throws: ZsyncIndexError.self) { try ZsyncIndex.decode(garbage, from: "g", limits: Self.limits) }
        }
    }

    /// The seed is v1; v2 is v1 with two regions rewritten and 10,000 bytes inserted: a rolling
    /// match finds every block of v2 but those the edits touch, each at the offset in v1 where
    /// its bytes are.
    @Test func aRollingMatchFindsTheBlocksTheSeedHolds() async throws {
        let v1 = randomData(600_000, seed: 30)
        var v2 = v1
        v2.replaceSubrange(100_000..<120_000, with: randomData(20_000, seed: 31))
        v2.insert(contentsOf: randomData(10_000, seed: 32), at: 300_000)
        v2.replaceSubrange(500_000..<505_000, with: randomData(5_000, seed: 33))
        let target = v2
        guard let control = try await offThePool({ try Zsyncmake.controlFile(for: target) }) else { return }
        let index = try ZsyncIndex.decode(control, from: "v2.zsync", limits: Self.limits)
        let seed = folder.file("v1")
        try v1.write(to: seed)
        // The matches read whole files and hash them: off the cooperative pool (docs/Testing.md).
        let plan = try await offThePool { ChunkPlan(zsync: index, seed: seed) }
        #expect(plan.seeds == [seed])
        var fetched = 0
        for (block, source) in plan.sources.enumerated() {
            let length = index.length(ofPiece: block)
            switch source {
            case .seed(let number, let offset):
                #expect(number == 0)
                #expect(v1[Int(offset)..<Int(offset) + length] == v2[Int(index.offset(ofPiece: block))..<Int(index.offset(ofPiece: block)) + length],
                        "block \(block) at \(offset)")
            case .fetch:
                fetched += length
            }
        }
        // The 35,000 changed bytes, and up to three blocks around each edit.
        #expect(fetched >= 35_000 && fetched <= 35_000 + 3 * 3 * index.blockSize, "\(fetched) bytes fetched")
        // With nothing changed, everything is copied, the short last block included.
        let unchanged = folder.file("v2")
        try v2.write(to: unchanged)
        let same = try await offThePool { ChunkPlan(zsync: index, seed: unchanged) }
        #expect(same.seeds == [unchanged] && same.sources.allSatisfy { $0 != .fetch })
        // Without a seed, everything is fetched.
        let missing = folder.file("none")
        #expect(try await offThePool { ChunkPlan(zsync: index, seed: missing) }.sources.allSatisfy { $0 == .fetch })
    }
}
