import Foundation

/// A zsync control file (`FILE.zsync`, made by `zsyncmake`), read as an index: the file's length
/// and SHA-1, and per block of ``blockSize`` bytes its rolling checksum and the first
/// ``checksumBytes`` bytes of its MD4.
///
/// Read from a stranger by ``decode(_:from:limits:)``, which checks every number before it uses
/// it. A reader finds the blocks it already holds by a rolling match against the previous
/// version (``matches(inFileAt:)``, docs/ChunkIndex.md "zsync control files"); each block is
/// then a piece of the file (``PieceIndex``), copied or fetched and checked by its MD4, and the
/// whole file by its SHA-1 at the end.
package struct ZsyncIndex: Sendable, Equatable {
    /// The extension that makes an index URL a zsync control file: `issue.pdf.zsync`.
    package static let fileExtension = "zsync"

    /// The file's size in bytes.
    package let fileSize: Int64
    /// Every block is this long (a power of two) but the last, which is padded with zeros to it
    /// for its checksums.
    package let blockSize: Int
    /// How many consecutive blocks must match before any is taken from a seed: 1 or 2.
    package let sequenceMatches: Int
    /// Bytes of each block's rolling checksum in the file: 2 (B only), 3 (A's low byte and B)
    /// or 4 (A and B).
    package let rsumBytes: Int
    /// Bytes of each block's MD4 in the file: 3 to 16.
    package let checksumBytes: Int
    /// The whole file's SHA-1 (20 bytes).
    package let sha1: [UInt8]
    /// Each block's rolling checksum, `A << 16 | B`, A masked to the bytes the file gives.
    package let rsums: [UInt32]
    /// The first ``checksumBytes`` bytes of each block's MD4, one after another.
    package let checksums: [UInt8]

    package init(fileSize: Int64, blockSize: Int, sequenceMatches: Int, rsumBytes: Int, checksumBytes: Int,
                 sha1: [UInt8], rsums: [UInt32], checksums: [UInt8]) {
        self.fileSize = fileSize
        self.blockSize = blockSize
        self.sequenceMatches = sequenceMatches
        self.rsumBytes = rsumBytes
        self.checksumBytes = checksumBytes
        self.sha1 = sha1
        self.rsums = rsums
        self.checksums = checksums
    }

    /// Whether `url` names a zsync control file: its path ends in `.zsync`.
    package static func isControlFile(_ url: URL) -> Bool {
        url.pathExtension.lowercased() == fileExtension
    }

    /// How many blocks the file has.
    package var blockCount: Int { rsums.count }

    /// The mask of A's bits that ``rsumBytes`` keeps (in the low 16 bits).
    package var rsumAMask: UInt32 {
        switch rsumBytes {
        case 4: 0xffff
        case 3: 0xff
        default: 0
        }
    }

    /// 40 lowercase hexadecimal digits.
    package var sha1Hex: String { sha1.map { String(format: "%02x", $0) }.joined() }

    /// The rolling checksum of `bytes` padded with zeros to `blockSize`: A the sum of the bytes,
    /// B the sum of each byte times its distance from the block's end, both modulo 2^16.
    package static func rsum(_ bytes: UnsafeRawBufferPointer, blockSize: Int) -> (a: UInt16, b: UInt16) {
        var a: UInt16 = 0
        var b: UInt16 = 0
        for byte in bytes {
            a &+= UInt16(byte)
            b &+= a
        }
        // Each zero of the padding adds A to B once more.
        b &+= a &* UInt16(truncatingIfNeeded: max(0, blockSize - bytes.count))
        return (a, b)
    }
}

extension ZsyncIndex: PieceIndex {
    package var pieceCount: Int { rsums.count }
    package var largestPiece: Int { blockSize }
    package func offset(ofPiece number: Int) -> Int64 { Int64(number) * Int64(blockSize) }

    package func length(ofPiece number: Int) -> Int {
        Int(min(Int64(blockSize), fileSize - Int64(number) * Int64(blockSize)))
    }

    package func piece(_ number: Int, matches bytes: UnsafeRawBufferPointer) -> Bool {
        guard bytes.count == length(ofPiece: number) else { return false }
        let digest = MD4.digest(bytes, zeroPaddedTo: blockSize)
        let start = number * checksumBytes
        return digest.prefix(checksumBytes).elementsEqual(checksums[start..<start + checksumBytes])
    }

    package var validator: ResourceValidator { ResourceValidator("zsync-sha1:\(sha1Hex)", strength: .strong) }
    package var wholeFileSHA256: SHA256Value? { nil }
    package var pieceName: String { "block" }
    package var pieceCheck: String { "MD4" }

    /// The blocks found in `seed` by the rolling match; neither `recorded` (chunks) nor `locate`
    /// is asked (``ChunkPlan/init(zsync:seed:)``).
    package func plan(seed: URL?, recorded: [ChunkIndex.Chunk]?, locate: ([SHA256Value]) -> [SHA256Value: ChunkPlan.Location]) -> ChunkPlan {
        ChunkPlan(zsync: self, seed: seed)
    }
}

/// A zsync control file refused: which one (its URL or path), what was wrong, and on which line
/// of its header.
package struct ZsyncIndexError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What was wrong.
    package enum Kind: Sendable, Equatable {
        /// It does not begin with `zsync: `.
        case notZsync
        /// A header line that cannot be read, a value out of range, or a header missing.
        case header
        /// A file larger than the reader's limit, or more blocks than it holds.
        case size
        /// Fewer checksum bytes than the blocks need, or no blank line ending the header.
        case truncated
        /// Bytes after the last block's checksums.
        case trailing
    }

    /// The control file, as its reader named it: a URL or a path.
    package var source: String
    package var kind: Kind
    /// The header line the problem is on (1 for the first), if any.
    package var line: Int?
    /// The problem: `the block size 3000 is not a power of two`.
    package var problem: String

    package init(source: String, kind: Kind, line: Int? = nil, problem: String) {
        self.source = source
        self.kind = kind
        self.line = line
        self.problem = problem
    }

    /// `zsync control file https://cdn.example.com/a.pdf.zsync: line 4: the block size 3000 is not a power of two`.
    package var description: String {
        "zsync control file \(source): " + (line.map { "line \($0): " } ?? "") + problem
    }
}
