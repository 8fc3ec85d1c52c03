#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Paperboy
import PaperboyTestServers
import PaperboyTesting
import Testing

/// `paperboy index FILE…`: an index beside each file, one line each, and a file it cannot read
/// named without stopping the others.
@Suite("paperboy index", .timeLimit(.minutes(2)))
struct IndexCommandTests {
    let folder = TempFolder(prefix: "pbix")

    @Test func writesAnIndexBesideEachFileAndNamesAMissingOneWithExitOne() async throws {
        let big = folder.file("issue.pdf")
        try randomData(1 << 20, seed: 41).write(to: big)
        let empty = folder.file("empty.txt")
        try Data().write(to: empty)
        let missing = folder.file("missing.pdf")

        let result = try await CLI.run(["index", big.path, missing.path, empty.path])
        #expect(result.status == 1, "\(result.stderr)")
        #expect(result.stderr.contains(missing.path) && result.stderr.contains("No such file"), "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: missing.path + ".pbidx"))

        let lines = result.stdout.split(separator: "\n").map(String.init)
        #expect(lines.count == 2, "\(result.stdout)")
        for (file, line) in zip([big, empty], lines) {
            let written = try ChunkIndex.read(contentsOf: ChunkIndex.url(besides: file), limits: .init(maxFileSize: 1 << 30))
            #expect(written == (try ChunkIndex.make(ofFileAt: file)))
            let average = String(format: "%.1f", written.averageChunkLength / 1024)
            let chunks = "\(written.chunks.count) chunk\(written.chunks.count == 1 ? "" : "s")"
            #expect(line == "\(file.path): \(chunks), avg \(average) KiB, SHA-256 \(try sha256Hex(ofFileAt: file))")
            var info = stat()
            #expect(stat(file.path + ".pbidx", &info) == 0 && info.st_mode & 0o777 == 0o644)
        }
        #expect(lines.first?.contains(" 0 chunks") == false)
        #expect(lines.last == "\(empty.path): 0 chunks, avg 0.0 KiB, SHA-256 \(sha256Hex(Data()))")
    }

    @Test func allReadableFilesExitZeroAndQuietPrintsNothing() async throws {
        let file = folder.file("a.bin")
        try randomData(300_000, seed: 43).write(to: file)
        let result = try await CLI.run(["index", "--quiet", file.path])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.isEmpty && result.stderr.isEmpty)
        #expect(FileManager.default.fileExists(atPath: file.path + ".pbidx"))
    }

    @Test func chunkSizesAreTheFormatsOrAUsageError() async throws {
        let file = folder.file("b.bin")
        try randomData(300_000, seed: 44).write(to: file)
        let refused = try await CLI.run(["index", "--chunk-sizes", "512/4096/8192", file.path])
        #expect(refused.status == 2)
        #expect(refused.stderr.contains("--chunk-sizes '512/4096/8192': a minimum chunk of 512 bytes"), "\(refused.stderr)")
        #expect(!FileManager.default.fileExists(atPath: file.path + ".pbidx"))

        let small = try await CLI.run(["index", "--chunk-sizes", "4096/16384/65536", file.path])
        #expect(small.status == 0, "\(small.stderr)")
        let written = try ChunkIndex.read(contentsOf: ChunkIndex.url(besides: file), limits: .init(maxFileSize: 1 << 30))
        #expect(written.parameters == ChunkingParameters(minimum: 4096, average: 16384, maximum: 65536))
        #expect(written.chunks.allSatisfy { $0.length <= 65536 })
    }
}
