/// MD4 (RFC 1320), for the block checksums of zsync control files (``ZsyncIndex``) only.
///
/// MD4 is broken as a cryptographic hash: a block checked by it is a hint that the bytes are the
/// ones the publisher meant, as zsync uses it. What makes a zsync-fetched file trusted is its
/// whole-file SHA-1 (and the asset's `sha256`, when it names one). swift-crypto has no MD4.
package enum MD4 {
    /// The 16-byte digest of `bytes` followed by zero bytes up to `length` (zsync pads a file's
    /// last, short block so), or of `bytes` alone when they are `length` or more.
    package static func digest(_ bytes: UnsafeRawBufferPointer, zeroPaddedTo length: Int = 0) -> [UInt8] {
        let total = max(bytes.count, length)
        var state: (UInt32, UInt32, UInt32, UInt32) = (0x6745_2301, 0xefcd_ab89, 0x98ba_dcfe, 0x1032_5476)
        var words = [UInt32](repeating: 0, count: 16)
        /// The byte at `index` of the padded message's first `total` bytes.
        func byte(_ index: Int) -> UInt8 { index < bytes.count ? bytes[index] : 0 }
        var offset = 0
        while offset + 64 <= total {
            if offset + 64 <= bytes.count {
                for index in 0..<16 { words[index] = UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: offset + 4 * index, as: UInt32.self)) }
            } else {
                for index in 0..<16 {
                    let at = offset + 4 * index
                    words[index] = UInt32(byte(at)) | UInt32(byte(at + 1)) << 8 | UInt32(byte(at + 2)) << 16 | UInt32(byte(at + 3)) << 24
                }
            }
            compress(&state, words)
            offset += 64
        }
        // The last bytes, a one bit, zeros, and the length in bits (little-endian): one or two blocks.
        var tail = [UInt8](repeating: 0, count: 128)
        for index in 0..<(total - offset) { tail[index] = byte(offset + index) }
        tail[total - offset] = 0x80
        let tailLength = total - offset < 56 ? 64 : 128
        let bits = UInt64(total) &* 8
        for index in 0..<8 { tail[tailLength - 8 + index] = UInt8(truncatingIfNeeded: bits >> UInt64(8 * index)) }
        for block in stride(from: 0, to: tailLength, by: 64) {
            for index in 0..<16 {
                let at = block + 4 * index
                words[index] = UInt32(tail[at]) | UInt32(tail[at + 1]) << 8 | UInt32(tail[at + 2]) << 16 | UInt32(tail[at + 3]) << 24
            }
            compress(&state, words)
        }
        return [state.0, state.1, state.2, state.3].flatMap { word in (0..<4).map { UInt8(truncatingIfNeeded: word >> UInt32(8 * $0)) } }
    }

    /// The 16-byte digest of `bytes`.
    package static func digest(_ bytes: [UInt8]) -> [UInt8] {
        bytes.withUnsafeBytes { digest($0) }
    }

    /// The order of the words in rounds 2 and 3, and each round's shifts (RFC 1320, 3.4).
    private static let round2Order = [0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15]
    private static let round3Order = [0, 8, 4, 12, 2, 10, 6, 14, 1, 9, 5, 13, 3, 11, 7, 15]
    private static let shifts: [[UInt32]] = [[3, 7, 11, 19], [3, 5, 9, 13], [3, 9, 11, 15]]

    /// Processes one 64-byte block, as sixteen little-endian words.
    private static func compress(_ state: inout (UInt32, UInt32, UInt32, UInt32), _ words: [UInt32]) {
        var registers = [state.0, state.1, state.2, state.3]
        for round in 0..<3 {
            for step in 0..<16 {
                // The register updated rotates a, d, c, b; the other three are b, c, d from it.
                let a = (4 - step % 4) % 4
                let (b, c, d) = (registers[(a + 1) % 4], registers[(a + 2) % 4], registers[(a + 3) % 4])
                let mixed: UInt32
                let word: UInt32
                switch round {
                case 0:
                    mixed = (b & c) | (~b & d)
                    word = words[step]
                case 1:
                    mixed = ((b & c) | (b & d) | (c & d)) &+ 0x5A82_7999
                    word = words[round2Order[step]]
                default:
                    mixed = (b ^ c ^ d) &+ 0x6ED9_EBA1
                    word = words[round3Order[step]]
                }
                let sum = registers[a] &+ mixed &+ word
                let shift = shifts[round][step % 4]
                registers[a] = sum << shift | sum >> (32 - shift)
            }
        }
        state = (state.0 &+ registers[0], state.1 &+ registers[1], state.2 &+ registers[2], state.3 &+ registers[3])
    }
}
