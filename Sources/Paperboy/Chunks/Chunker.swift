import Crypto

/// Finds content-defined cut points: FastCDC (Xia et al., 2016/2020) with a Gear rolling hash
/// and normalized chunking of level 2, as docs/ChunkIndex.md specifies byte by byte.
///
/// The hash is `h = (h << 1) &+ gear[byte]`: each byte shifts out of the top after 64 more, so
/// the top bits depend on the last 64 bytes only, and a cut found after an edit is found again
/// wherever the same 64 bytes recur. No cut is looked for in a chunk's first ``ChunkingParameters/minimum``
/// bytes (they are skipped, not hashed: FastCDC's speed-up); up to ``ChunkingParameters/average``
/// a cut needs the hash's top log2(avg) + 2 bits to be 0, after it log2(avg) − 2, so sizes
/// bunch around the average; at ``ChunkingParameters/maximum`` the chunk is cut whatever the hash.
package struct Chunker: Sendable {
    package let parameters: ChunkingParameters
    private let strictMask: UInt64
    private let looseMask: UInt64

    package init(_ parameters: ChunkingParameters = .standard) {
        self.parameters = parameters
        strictMask = parameters.strictMask
        looseMask = parameters.looseMask
    }

    /// The length of the chunk that starts at `bytes`' first byte.
    ///
    /// - Parameter bytes: at least ``ChunkingParameters/maximum`` bytes, or all that is left of
    ///   the file (its end is then a cut).
    package func cut(_ bytes: UnsafeRawBufferPointer) -> Int {
        let count = bytes.count
        guard count > parameters.minimum, let base = bytes.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return count }
        let end = Swift.min(count, parameters.maximum)
        let normal = Swift.min(parameters.average, end)
        return Self.gear.withUnsafeBufferPointer { table -> Int in
            let gear = table.baseAddress!
            var hash: UInt64 = 0
            var index = parameters.minimum
            while index < normal {
                hash = (hash << 1) &+ gear[Int(base[index])]
                index += 1
                if hash & strictMask == 0 { return index }
            }
            while index < end {
                hash = (hash << 1) &+ gear[Int(base[index])]
                index += 1
                if hash & looseMask == 0 { return index }
            }
            return end
        }
    }

    /// The 256 values of the Gear hash: `gear[b]` is the first 8 bytes, big-endian, of the
    /// SHA-256 of the one byte `b` (docs/ChunkIndex.md), so that anyone can rebuild the table.
    package static let gear: [UInt64] = (0...255).map { byte in
        SHA256.hash(data: [UInt8(byte)]).prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
    }
}
