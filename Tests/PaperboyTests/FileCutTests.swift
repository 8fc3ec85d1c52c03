import Crypto
import Foundation
import Paperboy
import PaperboyTesting
import Testing

/// A file cut by several threads, each from its own share on, then stitched (`FileCut`): the
/// same index, byte for byte, as the cut rule applied once from the first byte to the last,
/// whatever the file's size, its bytes and the number of threads.
@Suite("File cut", .timeLimit(.minutes(2)))
struct FileCutTests {
    let folder = TempFolder(prefix: "pbcut")

    /// The reference: the whole file in memory, cut from its first byte by ``Chunker`` one
    /// chunk after the other, each chunk and the whole hashed.
    static func sequentialIndex(of data: Data, parameters: ChunkingParameters) -> (chunks: [ChunkIndex.Chunk], sha256: SHA256Value) {
        var chunks: [ChunkIndex.Chunk] = []
        data.withUnsafeBytes { bytes in
            let chunker = Chunker(parameters)
            var start = 0
            while start < bytes.count {
                let length = chunker.cut(UnsafeRawBufferPointer(rebasing: bytes[start...]))
                let chunk = UnsafeRawBufferPointer(rebasing: bytes[start..<(start + length)])
                chunks.append(ChunkIndex.Chunk(offset: Int64(start), length: length, sha256: SHA256Value(SHA256.hash(data: chunk))))
                start += length
            }
        }
        return (chunks, SHA256Value(SHA256.hash(data: data)))
    }

    /// Checks every way of cutting `data` against the reference.
    func expectSameCuts(_ data: Data, parameters: ChunkingParameters, segments: [Int?], _ what: String) throws {
        let file = folder.file("cut.bin")
        try data.write(to: file)
        let reference = Self.sequentialIndex(of: data, parameters: parameters)
        for count in segments {
            let made = try ChunkIndex.make(ofFileAt: file, parameters: parameters, segments: count)
            // The fields are all an index's bytes hold (`encoded()`).
            #expect(Self.firstDifference(made.chunks, reference.chunks) == nil, "\(what), \(data.count) bytes, \(count.map(String.init) ?? "automatic") segments")
            #expect(made.sha256 == reference.sha256 && made.fileSize == Int64(data.count) && made.parameters == parameters)
            let chunks = try ChunkIndex.chunks(ofFileAt: file, parameters: parameters, segments: count)
            #expect(Self.firstDifference(chunks, reference.chunks) == nil, "chunks only: \(what), \(data.count) bytes, \(count.map(String.init) ?? "automatic") segments")
        }
    }

    /// Where two cuts first differ, briefly (a whole cut would fill the log).
    static func firstDifference(_ cut: [ChunkIndex.Chunk], _ reference: [ChunkIndex.Chunk]) -> String? {
        for (number, (chunk, expected)) in zip(cut, reference).enumerated() where chunk != expected {
            return "chunk \(number): \(chunk), expected \(expected)"
        }
        return cut.count == reference.count ? nil : "\(cut.count) chunks, expected \(reference.count)"
    }

    static let small = ChunkingParameters(minimum: 1024, average: 4096, maximum: 16384)!

    /// Sizes around the minimum, average and maximum chunk and their multiples, the empty file
    /// and one byte, cut by 1 to 7 threads (more threads than chunks, shares shorter than the
    /// minimum chunk).
    @Test(arguments: [small, ChunkingParameters.standard])
    func sizesAroundTheChunkSizesCutAsOneThreadDoes(parameters: ChunkingParameters) throws {
        var sizes: Set<Int> = [0, 1, 2, 3, 7, 100]
        for size in [parameters.minimum, parameters.average, parameters.maximum, 2 * parameters.maximum, 3 * parameters.maximum + parameters.minimum] {
            for delta in -2...2 { sizes.insert(size + delta) }
        }
        var generator = SplitMix64(seed: 2911)
        for _ in 0..<8 { sizes.insert(Int.random(in: 1...(20 * parameters.maximum), using: &generator)) }
        for size in sizes.sorted() where size >= 0 {
            try expectSameCuts(randomData(size, seed: UInt64(size) &+ 1), parameters: parameters, segments: [nil, 1, 2, 3, 4, 7], "random")
        }
    }

    /// Bytes where cuts starting at different offsets may never meet: one repeated byte (every
    /// chunk the maximum, or every one the same length), a short pattern repeated, random
    /// blocks repeated; and runs of zeros between random bytes. The thread before cuts on.
    @Test func repetitiveBytesCutAsOneThreadDoes() throws {
        let parameters = Self.small
        let block = randomData(5_000, seed: 3)
        let cases: [(String, Data)] = [
            ("zeros", Data(count: 300_001)),
            ("0xFF", Data(repeating: 0xFF, count: 200_003)),
            ("a 7-byte pattern", Data((0..<250_000).map { UInt8(truncatingIfNeeded: $0 % 7 &* 37) })),
            ("a 5,000-byte block repeated", Data((0..<60).flatMap { _ in block })),
            ("zeros between random bytes", randomData(70_000, seed: 4) + Data(count: 90_000) + randomData(70_000, seed: 5) + Data(count: 50_000)),
        ]
        for (what, data) in cases {
            try expectSameCuts(data, parameters: parameters, segments: [1, 2, 3, 5, 8], what)
        }
    }

    /// A file larger than the buffer, with standard chunks and the threads the machine picks, and
    /// with shares that start inside a chunk the buffer holds in two reads.
    @Test func aFileOfSeveralBuffersCutsAsOneThreadDoes() throws {
        let data = randomData(17 << 20 + 4_321, seed: 29)
        try expectSameCuts(data, parameters: .standard, segments: [nil, 2, 3], "17 MiB")
    }

    @Test func aMissingFileIsAnErrorNamingItWhateverTheThreads() throws {
        let missing = folder.file("missing.pdf")
        for segments in [1, 2] {
            #expect {
                try ChunkIndex.chunks(ofFileAt: missing, segments: segments)
            } throws: { error in
                "\(error)".contains(missing.path) && "\(error)".contains("No such file")
            }
        }
    }
}
