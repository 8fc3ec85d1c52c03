#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

/// Which piece of an indexed asset comes from where: copied from a file the library holds, or
/// fetched. The one place that decides it, for the library in process and under a daemon alike,
/// for a chunk index's chunks and a zsync control file's blocks (``init(zsync:seed:)``) alike.
///
/// Chunks of a chunk index are looked for in two places, in this order:
///
/// 1. A seed (the previous version of the asset, delivered to the same path of the same issue) is
///    cut with the index's own parameters: content-defined cuts fall at the same places wherever
///    the same bytes recur, so a chunk the index names is found by its SHA-256 whatever moved
///    around it. The cut uses every core and skips the whole file's SHA-256
///    (``ChunkIndex/chunks(ofFileAt:parameters:segments:)``: 0.11 s for 200 MB on two cores, of
///    a 0.57 s corrected issue, Benchmarks/delta). A seed whose chunks the store recorded when it
///    was delivered (an indexed asset's file, covered from its first byte to its last) is not cut
///    again: those chunks are used (2 ms). Chunks cut with other parameters than the new index's
///    match fewer of its chunks: those are fetched.
/// 2. The chunks still missing are located by their SHA-256 in the files of other delivered
///    indexed assets, in any issue (the store's chunk table, through `locate`). Such a file is
///    not cut again: the table gives each chunk's offset.
///
/// Either is only a hint: each chunk copied is hashed again as it is read (``ChunkedTransfer``),
/// and one that changed is fetched instead.
package struct ChunkPlan: Sendable {
    /// Where one chunk comes from.
    package enum Source: Sendable, Equatable {
        /// In seed file `seed`, at `offset`.
        case seed(Int, offset: Int64)
        /// From the source.
        case fetch
    }

    /// One step of the plan, in file order.
    package enum Step: Sendable, Equatable {
        /// Chunks `chunks` (adjacent, and adjacent in the seed) are copied from seed `seed`,
        /// the first at `offset`, as one run (cloned where the file system can, ``ClonePlan``).
        case copy(chunks: Range<Int>, seed: Int, offset: Int64)
        /// Chunks `chunks` (adjacent) are fetched as one range.
        case fetch(chunks: Range<Int>)
    }

    /// Where a chunk was located outside the seeds: in `file`, at `offset`.
    package struct Location: Sendable, Equatable {
        package var file: URL
        package var offset: Int64

        package init(file: URL, offset: Int64) {
            self.file = file
            self.offset = offset
        }
    }

    /// The most files located chunks are copied from (each is held open while the asset is
    /// filled); chunks located in further files are fetched.
    package static let maxLocatedFiles = 64

    /// The chunks or blocks, in file order ("chunk" below stands for either).
    package let index: any PieceIndex
    /// The files chunks may be copied from: the seeds that could be read, then the files
    /// chunks were located in.
    package let seeds: [URL]
    /// Each chunk's source, in index order.
    package let sources: [Source]

    /// Plans `index` when `seeds` may hold some of its chunks, and `locate` may know where others
    /// are. A seed or located file that cannot be read, or is not a regular file, is left out.
    ///
    /// - Parameter locate: called once, with the SHA-256s (each once) of the chunks no seed
    ///   holds, if any; answers where it knows some of them to be.
    /// - Parameter recorded: the chunks the store recorded for a seed, by its URL (used instead of
    ///   cutting it when they cover the file as it is now).
    package init(index: ChunkIndex, seeds: [URL], recorded: [URL: [ChunkIndex.Chunk]] = [:],
                 locate: ([SHA256Value]) -> [SHA256Value: Location] = { _ in [:] }) {
        self.index = index
        var found: [SHA256Value: (seed: Int, offset: Int64)] = [:]
        var usable: [URL] = []
        for url in seeds {
            guard let size = Self.regularFileSize(url) else { continue }
            let chunks: [ChunkIndex.Chunk]
            if let known = recorded[url], Self.cover(known, size: size) {
                chunks = known
            } else {
                guard let cut = try? ChunkIndex.chunks(ofFileAt: url, parameters: index.parameters) else { continue }
                chunks = cut
            }
            for chunk in chunks where found[chunk.sha256] == nil {
                found[chunk.sha256] = (usable.count, chunk.offset)
            }
            usable.append(url)
        }
        var missing: [SHA256Value] = []
        var asked = Set<SHA256Value>()
        for chunk in index.chunks where found[chunk.sha256] == nil && asked.insert(chunk.sha256).inserted {
            missing.append(chunk.sha256)
        }
        if !missing.isEmpty {
            let located = locate(missing)
            // Each file once, in the order the index first needs it; a seed is not opened twice.
            var files: [String: Int?] = [:]
            for (number, url) in usable.enumerated() { files[url.path] = number }
            var added = 0
            for sha256 in missing {
                guard let location = located[sha256], location.offset >= 0 else { continue }
                let path = location.file.path
                if files[path] == nil {
                    let usableFile = added < Self.maxLocatedFiles && Self.isRegularFile(location.file)
                    files[path] = .some(usableFile ? usable.count : nil)
                    if usableFile {
                        usable.append(location.file)
                        added += 1
                    }
                }
                if let seed = files[path] ?? nil { found[sha256] = (seed, location.offset) }
            }
        }
        self.seeds = usable
        sources = index.chunks.map { chunk in
            found[chunk.sha256].map { .seed($0.seed, offset: $0.offset) } ?? .fetch
        }
    }

    /// The most bytes one copy step holds: the run is read back and checked between two
    /// cancellation checks (about 30 ms here).
    package static let maxCopyRun: Int64 = 32 << 20

    /// Plans the blocks of a zsync control file when `seed` (the previous version) may hold
    /// some: each block the rolling match finds in it (``ZsyncIndex/matches(inFileAt:)``) is
    /// copied from there, the others fetched. A seed that cannot be read, or is not a regular
    /// file, is left out. The chunk table is not asked: a block's truncated MD4 does not name
    /// bytes safely across files.
    package init(zsync index: ZsyncIndex, seed: URL?) {
        self.index = index
        if let seed, Self.isRegularFile(seed), let found = index.matches(inFileAt: seed), found.contains(where: { $0 >= 0 }) {
            seeds = [seed]
            sources = found.map { $0 >= 0 ? .seed(0, offset: $0) : .fetch }
        } else {
            seeds = []
            sources = Array(repeating: .fetch, count: index.blockCount)
        }
    }

    /// The steps for the chunks after the first `offset` bytes (a chunk boundary, already in the
    /// partial file): adjacent fetched chunks coalesced into one range, and chunks that follow
    /// each other in the same seed into one copy of up to ``maxCopyRun`` bytes.
    package func steps(after offset: Int64) -> [Step] {
        var steps: [Step] = []
        var index = self.index.firstPiece(atOrAfter: offset)
        while index < sources.count {
            switch sources[index] {
            case .seed(let seed, let offset):
                var end = index + 1
                var length = Int64(self.index.length(ofPiece: index))
                while end < sources.count, sources[end] == .seed(seed, offset: offset + length),
                      length + Int64(self.index.length(ofPiece: end)) <= Self.maxCopyRun {
                    length += Int64(self.index.length(ofPiece: end))
                    end += 1
                }
                steps.append(.copy(chunks: index..<end, seed: seed, offset: offset))
                index = end
            case .fetch:
                var end = index + 1
                while end < sources.count, sources[end] == .fetch { end += 1 }
                steps.append(.fetch(chunks: index..<end))
                index = end
            }
        }
        return steps
    }

    /// Whether `chunks` follow each other from byte 0 to byte `size`, none empty.
    static func cover(_ chunks: [ChunkIndex.Chunk], size: Int64) -> Bool {
        var end: Int64 = 0
        for chunk in chunks {
            guard chunk.offset == end, chunk.length > 0 else { return false }
            end += Int64(chunk.length)
        }
        return end == size && !chunks.isEmpty
    }

    /// The size of the regular file at `url`; nil for anything else (a symbolic link is not followed).
    private static func regularFileSize(_ url: URL) -> Int64? {
        var info = stat()
        guard lstat(url.path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { return nil }
        return Int64(info.st_size)
    }

    /// Whether `url` is a regular file (a symbolic link is not followed).
    private static func isRegularFile(_ url: URL) -> Bool { regularFileSize(url) != nil }
}
