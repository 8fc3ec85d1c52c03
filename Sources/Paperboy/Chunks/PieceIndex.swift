import Crypto
import Foundation

/// What a publisher says a file is made of, piece by piece, so that ``ChunkedTransfer`` can fill
/// it from pieces copied and fetched and check each one as it lands: a chunk index's chunks
/// (``ChunkIndex``, each checked by its SHA-256) or a zsync control file's blocks
/// (``ZsyncIndex``, each checked by its MD4).
///
/// The pieces follow one another from offset 0 and add up to ``fileSize``; the readers of both
/// formats refuse anything else.
package protocol PieceIndex: Sendable {
    /// The file's size in bytes.
    var fileSize: Int64 { get }
    /// How many pieces the file has.
    var pieceCount: Int { get }
    /// The longest piece: a buffer of this size holds any of them.
    var largestPiece: Int { get }
    /// Where piece `number` starts.
    func offset(ofPiece number: Int) -> Int64
    /// How long piece `number` is.
    func length(ofPiece number: Int) -> Int
    /// Whether `bytes` are piece `number`, as the index describes it.
    func piece(_ number: Int, matches bytes: UnsafeRawBufferPointer) -> Bool
    /// What a partial file filled from this index is recorded with: a resume continues only the
    /// same version.
    var validator: ResourceValidator { get }
    /// The whole file's SHA-256, when the index gives one (the sink checks it at the end).
    var wholeFileSHA256: SHA256Value? { get }
    /// What a piece is called in messages: `chunk`, `block`.
    var pieceName: String { get }
    /// What a piece is checked by, in messages: `SHA-256`, `MD4`.
    var pieceCheck: String { get }
    /// Which pieces are copied from `seed` (the version delivered before, if any) or from files
    /// `locate` knows, and which are fetched (``ChunkPlan``); `recorded`: the chunks the store
    /// recorded for the seed's file, if any.
    func plan(seed: URL?, recorded: [ChunkIndex.Chunk]?, locate: ([SHA256Value]) -> [SHA256Value: ChunkPlan.Location]) -> ChunkPlan
}

extension PieceIndex {
    /// The first piece starting at or after `offset` (``pieceCount`` when none does).
    package func firstPiece(atOrAfter offset: Int64) -> Int {
        var low = 0
        var high = pieceCount
        while low < high {
            let middle = (low + high) / 2
            if self.offset(ofPiece: middle) < offset { low = middle + 1 } else { high = middle }
        }
        return low
    }

    /// The largest piece boundary at or below `offset`: a resumed asset continues from a whole
    /// piece.
    package func boundary(atOrBelow offset: Int64) -> Int64 {
        guard offset > 0 else { return 0 }
        // The first piece starting after `offset`; the one before it holds `offset`.
        let after = firstPiece(atOrAfter: offset + 1)
        guard after > 0 else { return 0 }
        let start = self.offset(ofPiece: after - 1)
        let end = start + Int64(length(ofPiece: after - 1))
        return end <= offset ? end : start
    }
}

extension ChunkIndex: PieceIndex {
    package var pieceCount: Int { chunks.count }
    package var largestPiece: Int { parameters.maximum }
    package func offset(ofPiece number: Int) -> Int64 { chunks[number].offset }
    package func length(ofPiece number: Int) -> Int { chunks[number].length }

    package func piece(_ number: Int, matches bytes: UnsafeRawBufferPointer) -> Bool {
        bytes.count == chunks[number].length && SHA256Value(SHA256.hash(data: bytes)) == chunks[number].sha256
    }

    package var validator: ResourceValidator { ResourceValidator("pbidx-sha256:\(sha256)", strength: .strong) }
    package var wholeFileSHA256: SHA256Value? { sha256 }
    package var pieceName: String { "chunk" }
    package var pieceCheck: String { "SHA-256" }

    package func plan(seed: URL?, recorded: [ChunkIndex.Chunk]?, locate: ([SHA256Value]) -> [SHA256Value: ChunkPlan.Location]) -> ChunkPlan {
        var known: [URL: [ChunkIndex.Chunk]] = [:]
        if let seed, let recorded { known[seed] = recorded }
        return ChunkPlan(index: self, seeds: seed.map { [$0] } ?? [], recorded: known, locate: locate)
    }
}
