#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

extension ZsyncIndex {
    /// Where in the file at `url` (a seed: the previous version) each block is, found as zsync
    /// finds it: a rolling checksum over every byte offset, and where it agrees with a block's
    /// (with ``sequenceMatches`` 2, with two consecutive blocks' at once), the MD4 of the bytes
    /// there; after a match the scan jumps past the blocks matched, and the block after them is
    /// tried alone first (as zsync 0.6.2 does: a run of matching blocks continues one block at a
    /// time, so that a file's last block, which begins no pair, is found too).
    ///
    /// The seed is read once, in order, through a buffer of a few MiB (memory stays flat
    /// whatever its size); past its end it reads as zeros, as zsync pads it, so that a short
    /// last block can match. A block is placed only where all its bytes lie in the seed.
    ///
    /// - Returns: for each block, its offset in the seed, or -1 where it was not found; `nil`
    ///   when the seed cannot be opened or read.
    package func matches(inFileAt url: URL) -> [Int64]? {
        let fd = open(url.path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var found = [Int64](repeating: -1, count: blockCount)
        guard blockCount >= sequenceMatches else { return found }
        let table = MatchTable(self)
        let context = blockSize * sequenceMatches
        let capacity = max(4 << 20, 4 * context)
        // The scanned bytes, and room for a context of zeros after the seed's end.
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: capacity + context, alignment: 16)
        defer { buffer.deallocate() }
        let bytes = UnsafeRawBufferPointer(buffer)
        let shift = UInt16(truncatingIfNeeded: blockSize.trailingZeroBitCount)
        var start: Int64 = 0
        var filled = 0
        var x = 0
        var atEnd = false
        // The rolling checksums of the block at `x` (a0, b0) and, with two consecutive matches, of
        // the block after it (a1, b1): plain variables, the loop's hot path.
        var (a0, b0, a1, b1): (UInt16, UInt16, UInt16, UInt16) = (0, 0, 0, 0)
        let pairs = sequenceMatches > 1
        let mask = rsumAMask
        var valid = false
        // The block that continues the last match, tried alone at the offset after it.
        var continuing: Int?
        while !atEnd {
            // Keep the bytes from `x` on, and fill the buffer up behind them.
            if x > 0 {
                memmove(buffer.baseAddress!, buffer.baseAddress! + x, filled - x)
                start += Int64(x)
                filled -= x
                x = 0
            }
            switch POSIX.readFully(fd, into: UnsafeMutableRawBufferPointer(rebasing: buffer[filled..<capacity])) {
            case .failure: return nil
            case .success(let count):
                filled += count
                atEnd = filled < capacity
            }
            let limit: Int
            if atEnd {
                // zsync's padding: the seed's end reads as zeros.
                (buffer.baseAddress! + filled).initializeMemory(as: UInt8.self, repeating: 0, count: context)
                limit = filled
            } else {
                limit = filled - context
            }
            let seedSize = start + Int64(filled)
            while x < limit {
                if !valid {
                    (a0, b0) = Self.rsum(UnsafeRawBufferPointer(rebasing: bytes[x..<x + blockSize]), blockSize: blockSize)
                    if pairs { (a1, b1) = Self.rsum(UnsafeRawBufferPointer(rebasing: bytes[x + blockSize..<x + 2 * blockSize]), blockSize: blockSize) }
                    valid = true
                }
                if let next = continuing {
                    continuing = nil
                    if next < blockCount, continues(next, rolling: (a0, b0), at: x, in: bytes, seedOffset: start + Int64(x), seedSize: seedSize, into: &found) {
                        continuing = next + 1
                        x += blockSize
                        valid = false
                        continue
                    }
                }
                let key = pairs ? UInt32(b0) ^ UInt32(b1) << 16 : UInt32(b0) ^ (UInt32(a0) & mask) << 16
                if table.mayHold(key), let first = confirm(table.blocks(for: key), rolling: [(a0, b0), (a1, b1)], at: x, in: bytes,
                                                           seedOffset: start + Int64(x), seedSize: seedSize, into: &found) {
                    continuing = first + sequenceMatches
                    x += context
                    valid = false
                    continue
                }
                let leaving = UInt16(bytes[x])
                let entering = UInt16(bytes[x + blockSize])
                a0 = a0 &+ entering &- leaving
                b0 = b0 &+ a0 &- (leaving << shift)
                if pairs {
                    let next = UInt16(bytes[x + 2 * blockSize])
                    a1 = a1 &+ next &- entering
                    b1 = b1 &+ a1 &- (entering << shift)
                }
                x += 1
            }
        }
        return found
    }

    /// Checks the blocks whose rolling checksums `key` names against the bytes at `x`: the
    /// checksums in full, then the MD4s of ``sequenceMatches`` blocks. Each block that agrees is
    /// placed at `seedOffset` (``place(_:at:seedSize:into:)``).
    ///
    /// - Returns: the first block that agreed, if any.
    private func confirm(_ candidates: ArraySlice<UInt64>, rolling: [(a: UInt16, b: UInt16)], at x: Int, in bytes: UnsafeRawBufferPointer,
                         seedOffset: Int64, seedSize: Int64, into found: inout [Int64]) -> Int? {
        var digests: [[UInt8]] = []
        var matched: Int?
        for entry in candidates {
            let id = Int(entry & 0xffff_ffff)
            var agrees = true
            for block in 0..<sequenceMatches {
                let sum = (UInt32(rolling[block].a) & rsumAMask) << 16 | UInt32(rolling[block].b)
                if rsums[id + block] != sum { agrees = false; break }
            }
            guard agrees else { continue }
            for block in 0..<sequenceMatches {
                if digests.count == block {
                    let window = UnsafeRawBufferPointer(rebasing: bytes[x + block * blockSize..<x + (block + 1) * blockSize])
                    digests.append(MD4.digest(window))
                }
                let expected = checksums[(id + block) * checksumBytes..<(id + block + 1) * checksumBytes]
                if !digests[block].prefix(checksumBytes).elementsEqual(expected) { agrees = false; break }
            }
            guard agrees else { continue }
            matched = matched ?? id
            for block in 0..<sequenceMatches {
                place(id + block, at: seedOffset + Int64(block * blockSize), seedSize: seedSize, into: &found)
            }
        }
        return matched
    }

    /// Whether block `id` alone is at `x` (its rolling checksum `rolling`, then its MD4): a run
    /// of matched blocks continuing. Placed if so.
    private func continues(_ id: Int, rolling: (a: UInt16, b: UInt16), at x: Int, in bytes: UnsafeRawBufferPointer,
                           seedOffset: Int64, seedSize: Int64, into found: inout [Int64]) -> Bool {
        guard rsums[id] == (UInt32(rolling.a) & rsumAMask) << 16 | UInt32(rolling.b) else { return false }
        let digest = MD4.digest(UnsafeRawBufferPointer(rebasing: bytes[x..<x + blockSize]))
        guard digest.prefix(checksumBytes).elementsEqual(checksums[id * checksumBytes..<(id + 1) * checksumBytes]) else { return false }
        place(id, at: seedOffset, seedSize: seedSize, into: &found)
        return true
    }

    /// Places block `id` at `offset` if it has no place yet and lies within the `seedSize` bytes
    /// read (before the seed's end, a block in the buffer always does).
    private func place(_ id: Int, at offset: Int64, seedSize: Int64, into found: inout [Int64]) {
        if found[id] < 0, offset + Int64(length(ofPiece: id)) <= seedSize { found[id] = offset }
    }
}

/// The blocks a rolling match looks for, by the key zsync hashes them under (B of a block and of
/// the next with two consecutive matches; B and A's kept bits with one), sorted for a binary
/// search, with a table of bits by key hash in front so that most offsets cost one memory read.
private struct MatchTable {
    /// `key << 32 | block`, sorted.
    let entries: [UInt64]
    let bits: [UInt64]
    let mask: UInt32

    init(_ index: ZsyncIndex) {
        let count = index.blockCount + 1 - index.sequenceMatches
        var entries: [UInt64] = []
        entries.reserveCapacity(max(0, count))
        for id in 0..<max(0, count) {
            let key = index.sequenceMatches > 1
                ? (index.rsums[id] & 0xffff) ^ (index.rsums[id + 1] & 0xffff) << 16
                : (index.rsums[id] & 0xffff) ^ (index.rsums[id] >> 16) << 16
            entries.append(UInt64(key) << 32 | UInt64(id))
        }
        entries.sort()
        self.entries = entries
        // 32 to 64 bits per block (at most 16 MiB for 2^21 blocks): about a 1 in 32 chance that an
        // offset matching no block searches the entries (at 8 bits, those searches were half the
        // scan's time over new bytes).
        let bitCount = max(64, min(1 << 32, (1 << (Int.bitWidth - max(1, count).leadingZeroBitCount)) * 32))
        mask = UInt32(truncatingIfNeeded: bitCount - 1)
        var bits = [UInt64](repeating: 0, count: bitCount / 64)
        for entry in entries {
            let bit = Self.spread(UInt32(entry >> 32)) & mask
            bits[Int(bit >> 6)] |= 1 << UInt64(bit & 63)
        }
        self.bits = bits
    }

    /// Mixes a key's bits, so that the bit table is filled evenly whichever bits carry entropy.
    private static func spread(_ key: UInt32) -> UInt32 {
        var value = key &* 0x9E37_79B1
        value ^= value >> 15
        return value
    }

    func mayHold(_ key: UInt32) -> Bool {
        let bit = Self.spread(key) & mask
        return bits[Int(bit >> 6)] & (1 << UInt64(bit & 63)) != 0
    }

    /// The entries whose key is `key`.
    func blocks(for key: UInt32) -> ArraySlice<UInt64> {
        let low = UInt64(key) << 32
        var lower = 0
        var upper = entries.count
        while lower < upper {
            let middle = (lower + upper) / 2
            if entries[middle] < low { lower = middle + 1 } else { upper = middle }
        }
        var end = lower
        while end < entries.count, entries[end] >> 32 == UInt64(key) { end += 1 }
        return entries[lower..<end]
    }
}
