import Foundation
@testable import Paperboy
import PaperboyTesting
import Testing

/// ``ChunkPlan`` with chunks the store located: copied from the delivered file at the offsets
/// the table gives, the file not cut again; the previous version first.
@Suite("chunk plan", .timeLimit(.minutes(1)))
struct ChunkPlanTests {
    let folder = TempFolder()

    @Test func chunksNotInTheSeedAreCopiedFromTheFilesTheStoreLocated() throws {
        let data = randomData(600_000, seed: 7)
        let file = folder.file("wanted")
        try data.write(to: file)
        let index = try ChunkIndex.make(ofFileAt: file)
        #expect(index.chunks.count >= 4)
        // The seed holds the first chunk; "elsewhere" holds the others, at other offsets, after
        // 5 bytes that would move every cut if it were cut again.
        let seed = folder.file("seed")
        try data.prefix(index.chunks[0].length).write(to: seed)
        let elsewhere = folder.file("elsewhere")
        try (Data("12345".utf8) + data).write(to: elsewhere)
        var asked: [[SHA256Value]] = []
        let plan = ChunkPlan(index: index, seeds: [seed]) { digests in
            asked.append(digests)
            return Dictionary(uniqueKeysWithValues: index.chunks.dropFirst().map { ($0.sha256, ChunkPlan.Location(file: elsewhere, offset: $0.offset + 5)) })
        }
        #expect(asked == [index.chunks.dropFirst().map(\.sha256)])
        #expect(plan.seeds == [seed, elsewhere])
        #expect(plan.sources == [.seed(0, offset: 0)] + index.chunks.dropFirst().map { .seed(1, offset: $0.offset + 5) })
        // Chunks that follow each other in one file are copied as one run.
        #expect(plan.steps(after: 0) == [.copy(chunks: 0..<1, seed: 0, offset: 0),
                                         .copy(chunks: 1..<index.chunks.count, seed: 1, offset: index.chunks[1].offset + 5)])
    }

    /// A seed whose chunks the store recorded is not cut again: the recorded chunks say where
    /// the index's chunks are in it (checked again as they are copied), provided they cover
    /// the file as it is now; otherwise it is cut.
    @Test func aSeedWithRecordedChunksCoveringItIsNotCutAgain() throws {
        let data = randomData(600_000, seed: 11)
        let file = folder.file("wanted")
        try data.write(to: file)
        let index = try ChunkIndex.make(ofFileAt: file)
        // The seed's bytes are others: cut, it would hold none of the index's chunks.
        let seed = folder.file("seed")
        let other = randomData(data.count, seed: 12)
        try other.write(to: seed)
        // The store says it holds the index's chunks, at their offsets.
        let plan = ChunkPlan(index: index, seeds: [seed], recorded: [seed: index.chunks])
        #expect(plan.sources == index.chunks.map { .seed(0, offset: $0.offset) })
        // Records that stop short of the file's end (it changed since), or leave a gap, are not
        // used: the seed is cut, and nothing is found in it.
        let short = Array(index.chunks.dropLast())
        var gap = index.chunks
        gap[1].offset += 1
        for stale in [short, gap, []] {
            let cut = ChunkPlan(index: index, seeds: [seed], recorded: [seed: stale])
            #expect(cut.sources == Array(repeating: .fetch, count: index.chunks.count))
        }
    }

    /// 320 chunks of 128 KiB located in one file: copy runs end where the file's chunks stop
    /// following each other, at a fetched chunk, and at ``ChunkPlan/maxCopyRun`` bytes.
    @Test func copiesAreCoalescedIntoRunsOfAdjacentChunks() throws {
        let length = 128 << 10
        let chunks = (0..<320).map { ChunkIndex.Chunk(offset: Int64($0 * length), length: length, sha256: SHA256Value(bytes: withUnsafeBytes(of: $0, Array.init) + Array(repeating: 0, count: 24))) }
        let index = ChunkIndex(parameters: .standard, fileSize: Int64(320 * length), sha256: chunks[0].sha256, chunks: chunks)
        let file = folder.file("elsewhere")
        try Data([1]).write(to: file)
        let places: [Int: Int64] = Dictionary(uniqueKeysWithValues: (0..<320).compactMap { number in
            switch number {
            case ..<300: (number, Int64(number * length))
            case 300: nil
            case ..<310: (number, Int64(number * length) + 7)
            default: (number, Int64((number - 310) * length) + 1)
            }
        })
        let plan = ChunkPlan(index: index, seeds: []) { _ in
            places.mapValues { ChunkPlan.Location(file: file, offset: $0) }.reduce(into: [:]) { $0[chunks[$1.key].sha256] = $1.value }
        }
        let perRun = Int(ChunkPlan.maxCopyRun) / length
        #expect(plan.steps(after: 0) == [
            .copy(chunks: 0..<perRun, seed: 0, offset: 0),
            .copy(chunks: perRun..<300, seed: 0, offset: Int64(perRun * length)),
            .fetch(chunks: 300..<301),
            .copy(chunks: 301..<310, seed: 0, offset: Int64(301 * length) + 7),
            .copy(chunks: 310..<320, seed: 0, offset: 1),
        ])
        #expect(plan.steps(after: Int64(305 * length)) == [
            .copy(chunks: 305..<310, seed: 0, offset: Int64(305 * length) + 7),
            .copy(chunks: 310..<320, seed: 0, offset: 1),
        ])
        // After a copy whose chunks 2 and 4-5 of 0..<8 did not match where they landed.
        let matched = [true, true, false, true, false, false, true, true]
        #expect(ChunkedTransfer.redo(0..<8, seed: 0, offset: 1000, matched: matched, in: index) == [
            .fetch(chunks: 2..<3),
            .copy(chunks: 3..<4, seed: 0, offset: 1000 + Int64(3 * length)),
            .fetch(chunks: 4..<6),
            .copy(chunks: 6..<8, seed: 0, offset: 1000 + Int64(6 * length)),
        ])
        #expect(ChunkedTransfer.redo(0..<8, seed: 0, offset: 1000, matched: Array(repeating: true, count: 8), in: index).isEmpty)
    }

    @Test func aLocatedFileThatIsASymbolicLinkIsLeftOut() throws {
        let data = randomData(300_000, seed: 8)
        let file = folder.file("wanted")
        try data.write(to: file)
        let index = try ChunkIndex.make(ofFileAt: file)
        let link = folder.file("link")
        try FileManager.default.createSymbolicLink(at: link, withDestinationURL: file)
        let plan = ChunkPlan(index: index, seeds: []) { _ in
            Dictionary(uniqueKeysWithValues: index.chunks.map { ($0.sha256, ChunkPlan.Location(file: link, offset: $0.offset)) })
        }
        #expect(plan.seeds.isEmpty)
        #expect(plan.sources.allSatisfy { $0 == .fetch })
    }
}
