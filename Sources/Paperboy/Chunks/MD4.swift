/// MD4 (RFC 1320), for the block checksums of zsync control files (``ZsyncIndex``) only.
///
/// MD4 is broken as a cryptographic hash: a block checked by it is a hint that the bytes are the
/// ones the publisher meant, as zsync uses it. What makes a zsync-fetched file trusted is its
/// whole-file SHA-1 (and the asset's `sha256`, when it names one). swift-crypto has no MD4.
///
/// Written out step by step as the RFC's reference is: a rolling match hashes about every byte
/// of the previous version once, so this is its cost (docs/Benchmarks.md, "Delta").
package enum MD4 {
    /// The 16-byte digest of `bytes` followed by zero bytes up to `length` (zsync pads a file's
    /// last, short block so), or of `bytes` alone when they are `length` or more.
    package static func digest(_ bytes: UnsafeRawBufferPointer, zeroPaddedTo length: Int = 0) -> [UInt8] {
        let total = max(bytes.count, length)
        var state = State()
        var position = 0
        if let base = bytes.baseAddress {
            while position + 64 <= bytes.count {
                state.compress(UnsafeRawPointer(base + position))
                position += 64
            }
        }
        // The rest of the bytes, the zeros up to `total`, a one bit, zeros, and the length in
        // bits (little-endian), through one 64-byte block.
        withUnsafeTemporaryAllocation(byteCount: 64, alignment: 8) { block in
            /// Fills `block` with the padded message's bytes from `position`, up to `total`, and
            /// zeros after them: how many message bytes it holds.
            func fill() -> Int {
                let count = min(64, total - position)
                let copied = max(0, min(count, bytes.count - position))
                if copied > 0 { block.baseAddress!.copyMemory(from: bytes.baseAddress! + position, byteCount: copied) }
                (block.baseAddress! + copied).initializeMemory(as: UInt8.self, repeating: 0, count: 64 - copied)
                return count
            }
            while total - position >= 64 {
                _ = fill()
                state.compress(UnsafeRawPointer(block.baseAddress!))
                position += 64
            }
            let count = fill()
            block[count] = 0x80
            if count >= 56 {
                state.compress(UnsafeRawPointer(block.baseAddress!))
                block.initializeMemory(as: UInt8.self, repeating: 0)
            }
            let bits = UInt64(total) &* 8
            for index in 0..<8 { block[56 + index] = UInt8(truncatingIfNeeded: bits >> UInt64(8 * index)) }
            state.compress(UnsafeRawPointer(block.baseAddress!))
        }
        return [state.a, state.b, state.c, state.d].flatMap { word in (0..<4).map { UInt8(truncatingIfNeeded: word >> UInt32(8 * $0)) } }
    }

    /// The 16-byte digest of `bytes`.
    package static func digest(_ bytes: [UInt8]) -> [UInt8] {
        bytes.withUnsafeBytes { digest($0) }
    }

    /// The four registers between blocks.
    private struct State {
        var a: UInt32 = 0x6745_2301
        var b: UInt32 = 0xefcd_ab89
        var c: UInt32 = 0x98ba_dcfe
        var d: UInt32 = 0x1032_5476

        @inline(__always) private static func rotate(_ value: UInt32, _ shift: UInt32) -> UInt32 { value << shift | value >> (32 - shift) }
        @inline(__always) private static func f(_ x: UInt32, _ y: UInt32, _ z: UInt32) -> UInt32 { (x & y) | (~x & z) }
        @inline(__always) private static func g(_ x: UInt32, _ y: UInt32, _ z: UInt32) -> UInt32 { (x & y) | (x & z) | (y & z) }
        @inline(__always) private static func h(_ x: UInt32, _ y: UInt32, _ z: UInt32) -> UInt32 { x ^ y ^ z }

        /// Processes the 64-byte block at `pointer` (RFC 1320, 3.4: rounds 1 to 3).
        mutating func compress(_ pointer: UnsafeRawPointer) {
            @inline(__always) func word(_ index: Int) -> UInt32 {
                UInt32(littleEndian: pointer.loadUnaligned(fromByteOffset: 4 * index, as: UInt32.self))
            }
            let x = (word(0), word(1), word(2), word(3), word(4), word(5), word(6), word(7),
                     word(8), word(9), word(10), word(11), word(12), word(13), word(14), word(15))
            var (a, b, c, d) = (self.a, self.b, self.c, self.d)
            @inline(__always) func one(_ a: inout UInt32, _ b: UInt32, _ c: UInt32, _ d: UInt32, _ x: UInt32, _ s: UInt32) {
                a = Self.rotate(a &+ Self.f(b, c, d) &+ x, s)
            }
            @inline(__always) func two(_ a: inout UInt32, _ b: UInt32, _ c: UInt32, _ d: UInt32, _ x: UInt32, _ s: UInt32) {
                a = Self.rotate(a &+ Self.g(b, c, d) &+ x &+ 0x5A82_7999, s)
            }
            @inline(__always) func three(_ a: inout UInt32, _ b: UInt32, _ c: UInt32, _ d: UInt32, _ x: UInt32, _ s: UInt32) {
                a = Self.rotate(a &+ Self.h(b, c, d) &+ x &+ 0x6ED9_EBA1, s)
            }
            one(&a, b, c, d, x.0, 3); one(&d, a, b, c, x.1, 7); one(&c, d, a, b, x.2, 11); one(&b, c, d, a, x.3, 19)
            one(&a, b, c, d, x.4, 3); one(&d, a, b, c, x.5, 7); one(&c, d, a, b, x.6, 11); one(&b, c, d, a, x.7, 19)
            one(&a, b, c, d, x.8, 3); one(&d, a, b, c, x.9, 7); one(&c, d, a, b, x.10, 11); one(&b, c, d, a, x.11, 19)
            one(&a, b, c, d, x.12, 3); one(&d, a, b, c, x.13, 7); one(&c, d, a, b, x.14, 11); one(&b, c, d, a, x.15, 19)

            two(&a, b, c, d, x.0, 3); two(&d, a, b, c, x.4, 5); two(&c, d, a, b, x.8, 9); two(&b, c, d, a, x.12, 13)
            two(&a, b, c, d, x.1, 3); two(&d, a, b, c, x.5, 5); two(&c, d, a, b, x.9, 9); two(&b, c, d, a, x.13, 13)
            two(&a, b, c, d, x.2, 3); two(&d, a, b, c, x.6, 5); two(&c, d, a, b, x.10, 9); two(&b, c, d, a, x.14, 13)
            two(&a, b, c, d, x.3, 3); two(&d, a, b, c, x.7, 5); two(&c, d, a, b, x.11, 9); two(&b, c, d, a, x.15, 13)

            three(&a, b, c, d, x.0, 3); three(&d, a, b, c, x.8, 9); three(&c, d, a, b, x.4, 11); three(&b, c, d, a, x.12, 15)
            three(&a, b, c, d, x.2, 3); three(&d, a, b, c, x.10, 9); three(&c, d, a, b, x.6, 11); three(&b, c, d, a, x.14, 15)
            three(&a, b, c, d, x.1, 3); three(&d, a, b, c, x.9, 9); three(&c, d, a, b, x.5, 11); three(&b, c, d, a, x.13, 15)
            three(&a, b, c, d, x.3, 3); three(&d, a, b, c, x.11, 9); three(&c, d, a, b, x.7, 11); three(&b, c, d, a, x.15, 15)

            self.a = self.a &+ a
            self.b = self.b &+ b
            self.c = self.c &+ c
            self.d = self.d &+ d
        }
    }
}
