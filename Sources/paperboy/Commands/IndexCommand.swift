import ArgumentParser
import Foundation
import Paperboy

/// `paperboy index FILE…`: writes the chunk index of each file beside it, as a publisher does
/// before a release (docs/ChunkIndex.md).
struct IndexCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "index",
        abstract: "Write FILE.pbidx beside each file: its chunks and their SHA-256, for fetching only what changed.",
        discussion: """
            Cuts each file into content-defined chunks (\(ChunkingParameters.standard) minimum, \
            average, maximum) and writes its index atomically beside it (mode 0644). Reads no \
            configuration. Exit codes: 0 every file indexed, 1 a file could not be read or its \
            index written (the others are still indexed).
            """
    )

    @Flag(name: .shortAndLong, help: "Print only errors.")
    var quiet = false

    @Option(help: ArgumentHelp("The minimum, average and maximum chunk, in bytes (the average a power of two).",
                               valueName: "MIN/AVG/MAX"))
    var chunkSizes: String?

    @Argument(help: "The files to index.")
    var files: [String]

    func validate() throws {
        if files.isEmpty { throw ValidationError("give at least one file") }
        _ = try parameters()
    }

    /// `--chunk-sizes`, or the standard sizes.
    func parameters() throws -> ChunkingParameters {
        guard let chunkSizes else { return .standard }
        let sizes = chunkSizes.split(separator: "/", omittingEmptySubsequences: false).map { Int($0) }
        guard sizes.count == 3, let minimum = sizes[0], let average = sizes[1], let maximum = sizes[2] else {
            throw ValidationError("--chunk-sizes '\(chunkSizes)' is not MIN/AVG/MAX in bytes, such as 16384/65536/262144")
        }
        if let problem = ChunkingParameters.problem(minimum: minimum, average: average, maximum: maximum) {
            throw ValidationError("--chunk-sizes '\(chunkSizes)': \(problem)")
        }
        return ChunkingParameters(minimum: minimum, average: average, maximum: maximum)!
    }

    func run() throws {
        let parameters = try parameters()
        var failed = false
        for file in files {
            let url = URL(fileURLWithPath: file)
            do throws(LibraryError) {
                let index = try ChunkIndex.make(ofFileAt: url, parameters: parameters)
                try AtomicFile.write(index.encoded(), to: ChunkIndex.url(besides: url), mode: 0o644)
                if !quiet { Console.line("\(file): \(Self.summary(of: index))") }
            } catch {
                Console.error("paperboy: \(error.message)")
                failed = true
            }
        }
        if failed { throw ExitCode(1) }
    }

    /// `3,201 chunks, avg 64.1 KiB, SHA-256 9f86d0…`.
    static func summary(of index: ChunkIndex) -> String {
        let count = index.chunks.count
        let average = String(format: "%.1f", index.averageChunkLength / 1024)
        return "\(count) chunk\(count == 1 ? "" : "s"), avg \(average) KiB, SHA-256 \(index.sha256)"
    }
}
