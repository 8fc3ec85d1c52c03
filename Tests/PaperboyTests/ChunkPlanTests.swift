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
