import Crypto
import Foundation
import Paperboy
import PaperboyTesting
import Testing

/// The publisher's chunk index (`ChunkIndex`): cuts that follow the content, chunks within
/// their limits adding up to the file, hashes that are the bytes', a format that reads back as
/// written, and a reader that refuses every hostile index naming it.
@Suite("Chunk index", .timeLimit(.minutes(2)))
struct ChunkIndexTests {
    let folder = TempFolder(prefix: "pbci")

    /// Writes `data` to a file in the test's folder and indexes it.
    func index(_ data: Data, named name: String = "file.bin", parameters: ChunkingParameters = .standard) throws -> ChunkIndex {
        let file = folder.file(name)
        try data.write(to: file)
        return try ChunkIndex.make(ofFileAt: file, parameters: parameters)
    }

    @Test func oneByteInsertedAtTheStartChangesOnlyTheFirstChunks() throws {
        let original = randomData(4 << 20, seed: 29)
        let before = try index(original, named: "v1")
        let after = try index(Data([0x5A]) + original, named: "v2")
        #expect(before.chunks.count >= 80, "4 MiB at 32 KiB should make dozens of chunks, made \(before.chunks.count)")
        let kept = Set(after.chunks.map(\.sha256))
        let lost = before.chunks.filter { !kept.contains($0.sha256) }
        #expect(lost.count <= 2, "\(lost.count) of \(before.chunks.count) chunks changed: \(lost.map(\.offset))")
        #expect(lost.allSatisfy { $0.offset < 2 * Int64(ChunkingParameters.standard.maximum) })
    }

    @Test func chunksFollowOneAnotherWithinTheirLimitsAndAddUpToTheFile() throws {
        let data = randomData(4 << 20 + 12_345, seed: 7)
        let made = try index(data)
        let parameters = ChunkingParameters.standard
        var offset: Int64 = 0
        for (number, chunk) in made.chunks.enumerated() {
            #expect(chunk.offset == offset)
            #expect(chunk.length <= parameters.maximum)
            if number < made.chunks.count - 1 { #expect(chunk.length >= parameters.minimum) }
            offset += Int64(chunk.length)
        }
        #expect(offset == Int64(data.count))
        #expect(made.fileSize == Int64(data.count))
    }

    @Test func theHashesAreTheBytesSHA256() throws {
        let data = randomData(1 << 20 + 99, seed: 8)
        let made = try index(data)
        #expect(made.sha256.description == sha256Hex(data))
        for chunk in made.chunks {
            let bytes = data[Int(chunk.offset)..<Int(chunk.offset) + chunk.length]
            #expect(chunk.sha256 == SHA256Value(SHA256.hash(data: bytes)))
        }
    }

    /// The file is read through a buffer of 1 MiB, refilled as chunks are cut: the cuts are the
    /// ones the cut rule makes on the whole file in memory.
    @Test func readingThroughTheBufferCutsWhereTheWholeFileInMemoryDoes() throws {
        let data = randomData(5 << 20 + 3, seed: 9)
        let made = try index(data)
        var lengths: [Int] = []
        data.withUnsafeBytes { bytes in
            var start = 0
            let chunker = Chunker(.standard)
            while start < bytes.count {
                let length = chunker.cut(UnsafeRawBufferPointer(rebasing: bytes[start...]))
                lengths.append(length)
                start += length
            }
        }
        #expect(made.chunks.map(\.length) == lengths)
    }

    @Test func anIndexReadsBackAsWritten() throws {
        let made = try index(randomData(700_000, seed: 10))
        let encoded = made.encoded()
        #expect(encoded.count == ChunkIndex.headerSize + made.chunks.count * ChunkIndex.entrySize)
        let file = folder.file("file.bin.pbidx")
        try encoded.write(to: file)
        let read = try ChunkIndex.read(contentsOf: file, limits: .init(maxFileSize: 700_000))
        #expect(read == made)
        #expect(try ChunkIndex.decode(encoded, from: "memory", limits: .init(maxFileSize: 1 << 30)) == made)
    }

    @Test func anEmptyFileHasNoChunks() throws {
        let made = try index(Data())
        #expect(made.chunks.isEmpty)
        #expect(made.fileSize == 0)
        #expect(made.sha256.description == sha256Hex(Data()))
        #expect(made.encoded().count == ChunkIndex.headerSize)
        #expect(try ChunkIndex.decode(made.encoded(), from: "empty", limits: .init(maxFileSize: 0)) == made)
    }

    @Test func aFileSmallerThanTheMinimumIsOneChunk() throws {
        let data = randomData(5_000, seed: 11) // below the 8 KiB minimum
        let made = try index(data)
        #expect(made.chunks.map(\.length) == [5_000])
        #expect(made.chunks.first?.sha256.description == sha256Hex(data))
        #expect(try ChunkIndex.decode(made.encoded(), from: "small", limits: .init(maxFileSize: 5_000)) == made)
    }

    @Test func aMissingFileIsAnErrorNamingIt() throws {
        let missing = folder.file("missing.pdf")
        #expect {
            try ChunkIndex.make(ofFileAt: missing)
        } throws: { error in
            "\(error)".contains(missing.path) && "\(error)".contains("No such file")
        }
    }

    @Test func onlyParametersTheFormatAllowsAreMade() {
        #expect(ChunkingParameters(minimum: 8 << 10, average: 32 << 10, maximum: 128 << 10) == .standard)
        #expect(ChunkingParameters(minimum: 512, average: 4096, maximum: 8192) == nil)
        #expect(ChunkingParameters(minimum: 4096, average: 3 << 12, maximum: 1 << 20) == nil)
        #expect(ChunkingParameters(minimum: 4096, average: 4096, maximum: 1 << 20) == nil)
        #expect(ChunkingParameters(minimum: 4096, average: 8192, maximum: 32 << 20) == nil)
    }

    /// The Gear table is the one docs/ChunkIndex.md gives: the first 8 bytes of SHA-256 of each byte.
    @Test func theGearTableIsTheDocumented() {
        #expect(Chunker.gear.count == 256)
        #expect(String(Chunker.gear[0], radix: 16) == "6e340b9cffb37a98")
        #expect(String(Chunker.gear[255], radix: 16) == "a8100ae6aa1940d0")
    }

    // MARK: - Hostile indexes

    static let hostileSize = 400_000

    /// A valid index of at least 3 chunks (400,000 bytes), to break one thing at a time.
    func validIndex() throws -> (ChunkIndex, Data) {
        let made = try index(randomData(Self.hostileSize, seed: 12), named: "hostile.bin")
        try #require(made.chunks.count >= 3)
        return (made, made.encoded())
    }

    static func put<Value: FixedWidthInteger>(_ value: Value, at offset: Int, in data: inout Data) {
        withUnsafeBytes(of: value.bigEndian) { data.replaceSubrange(offset..<offset + MemoryLayout<Value>.size, with: $0) }
    }

    struct Hostile: Sendable, CustomStringConvertible {
        var description: String
        var kind: ChunkIndexError.Kind
        /// A fragment the problem must say.
        var says: String
        var change: @Sendable (inout Data, ChunkIndex) -> Void
    }

    static let entry0 = ChunkIndex.headerSize
    static let hostile: [Hostile] = [
        Hostile(description: "empty", kind: .truncated, says: "0 bytes") { data, _ in data = Data() },
        Hostile(description: "bad magic", kind: .magic, says: "PBIDX") { data, _ in data[4] = UInt8(ascii: "Y") },
        Hostile(description: "another format", kind: .magic, says: "PBIDX") { data, _ in data = Data("%PDF-1.7\n".utf8) },
        Hostile(description: "version 2", kind: .version, says: "version 2") { data, _ in data[5] = 2 },
        Hostile(description: "cut in the header", kind: .truncated, says: "header") { data, _ in data = data.prefix(40) },
        Hostile(description: "minimum 0", kind: .parameters, says: "minimum") { data, _ in put(UInt32(0), at: 6, in: &data) },
        Hostile(description: "average not a power of two", kind: .parameters, says: "power of two") { data, _ in
            put(UInt32(65_537), at: 10, in: &data)
        },
        Hostile(description: "maximum 4 GiB", kind: .parameters, says: "maximum") { data, _ in put(UInt32.max, at: 14, in: &data) },
        Hostile(description: "a file above the limit", kind: .size, says: "limit") { data, _ in put(UInt64(1 << 40), at: 18, in: &data) },
        Hostile(description: "a file of 2^64 - 1 bytes", kind: .size, says: "18446744073709551615") { data, _ in
            put(UInt64.max, at: 18, in: &data)
        },
        Hostile(description: "more chunks than size / minimum + 1", kind: .count, says: "chunks for a file") { data, _ in
            put(UInt64(hostileSize / ChunkingParameters.standard.minimum + 2), at: 58, in: &data)
        },
        Hostile(description: "2^64 - 1 chunks", kind: .count, says: "18446744073709551615 chunks") { data, _ in
            put(UInt64.max, at: 58, in: &data)
        },
        Hostile(description: "fewer chunks than size / maximum", kind: .count, says: "needs") { data, _ in put(UInt64(0), at: 58, in: &data) },
        Hostile(description: "a chunk of length 0", kind: .chunkLength, says: "length 0") { data, _ in put(UInt32(0), at: entry0, in: &data) },
        Hostile(description: "a chunk above the maximum", kind: .chunkLength, says: "length 131073") { data, _ in
            put(UInt32(ChunkingParameters.standard.maximum + 1), at: entry0, in: &data)
        },
        Hostile(description: "a middle chunk below the minimum", kind: .chunkLength, says: "all but the last") { data, _ in
            put(UInt32(100), at: entry0 + ChunkIndex.entrySize, in: &data)
        },
        Hostile(description: "lengths adding up to less", kind: .total, says: "add up to") { data, index in
            put(UInt32(index.chunks.last!.length - 1), at: entry0 + (index.chunks.count - 1) * ChunkIndex.entrySize, in: &data)
        },
        Hostile(description: "lengths adding up to more", kind: .total, says: "more than the file's") { data, index in
            put(UInt32(index.chunks.last!.length + 1), at: entry0 + (index.chunks.count - 1) * ChunkIndex.entrySize, in: &data)
        },
        Hostile(description: "trailing bytes", kind: .trailing, says: "1 bytes after") { data, _ in data.append(0) },
        Hostile(description: "a cut entry", kind: .truncated, says: "cut short") { data, _ in data.removeLast(10) },
        Hostile(description: "the header alone", kind: .truncated, says: "cut short") { data, _ in data = data.prefix(ChunkIndex.headerSize) },
    ]

    @Test(arguments: hostile)
    func aHostileIndexIsRefusedNamingIt(_ hostile: Hostile) throws {
        let (made, valid) = try validIndex()
        var data = valid
        hostile.change(&data, made)
        let source = "https://cdn.example.com/issue.pdf.pbidx"
        #expect {
            try ChunkIndex.decode(data, from: source, limits: .init(maxFileSize: 1 << 30))
        } throws: { error in
            guard let error = error as? ChunkIndexError else { return false }
            #expect(error.kind == hostile.kind, "\(error)")
            #expect(error.description.hasPrefix("chunk index \(source): "), "\(error)")
            #expect(error.problem.contains(hostile.says), "\(error)")
            return true
        }
    }

    @Test func aChunkCountAboveTheReadersLimitIsRefused() throws {
        let (_, valid) = try validIndex()
        #expect(throws: ChunkIndexError.self) {
            try ChunkIndex.decode(valid, from: "limited", limits: .init(maxFileSize: 1 << 30, maxChunks: 2))
        }
        #expect(ChunkIndex.Limits(maxFileSize: 1 << 30).maxIndexBytes == ChunkIndex.headerSize + (1 << 20) * ChunkIndex.entrySize)
        #expect(ChunkIndex.Limits(maxFileSize: 4096).maxIndexBytes == ChunkIndex.headerSize + 5 * ChunkIndex.entrySize)
    }

    /// A file reader reads the header, then only the entries it announces and one byte more:
    /// 8 MiB after a valid index are never read (the error counts 1 byte after it).
    @Test func aFileIsReadNoFurtherThanItsHeaderAllows() throws {
        let (_, valid) = try validIndex()
        let file = folder.file("long.pbidx")
        try (valid + Data(count: 8 << 20)).write(to: file)
        #expect {
            try ChunkIndex.read(contentsOf: file, limits: .init(maxFileSize: 1 << 30))
        } throws: { error in
            guard let error = error as? ChunkIndexError else { return false }
            return error.kind == .trailing && error.problem.hasPrefix("1 bytes after") && error.source == file.path
        }
    }

    @Test func aMissingIndexIsUnreadableNamingIt() {
        let file = folder.file("none.pbidx")
        #expect {
            try ChunkIndex.read(contentsOf: file, limits: .init(maxFileSize: 1 << 30))
        } throws: { error in
            (error as? ChunkIndexError)?.kind == .unreadable && "\(error)".contains(file.path)
        }
    }

    /// The fuzz target's seeds (`Fuzz/Corpus/chunkindex`) are what their names say: four valid
    /// indexes for mutations to start from, three refused for one reason each.
    @Test func theFuzzSeedsAreWhatTheirNamesSay() throws {
        let corpus = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Fuzz/Corpus/chunkindex")
        let limits = ChunkIndex.Limits(maxFileSize: 64 << 20, maxChunks: 400)
        for name in ["empty-file", "one-small-chunk", "three-chunks-1k", "two-chunks-64k"] {
            let data = try Data(contentsOf: corpus.appendingPathComponent(name))
            #expect(try ChunkIndex.decode(data, from: name, limits: limits).encoded() == data, "\(name)")
        }
        let refused: [(String, ChunkIndexError.Kind)] = [("length-zero", .chunkLength), ("trailing-byte", .trailing), ("version-2", .version)]
        for (name, kind) in refused {
            let data = try Data(contentsOf: corpus.appendingPathComponent(name))
            #expect {
                try ChunkIndex.decode(data, from: name, limits: limits)
            } throws: { error in
                (error as? ChunkIndexError)?.kind == kind
            }
        }
    }
}
