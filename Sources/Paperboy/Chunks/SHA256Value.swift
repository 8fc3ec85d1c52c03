import Crypto

/// A SHA-256 digest held inline (32 bytes, no allocation): an index of a million chunks is a
/// million of these.
package struct SHA256Value: Sendable, Hashable, CustomStringConvertible {
    private var words: (UInt64, UInt64, UInt64, UInt64)

    /// The digest whose 32 bytes are `bytes` (exactly 32).
    package init(bytes: some Sequence<UInt8>) {
        var words = [UInt64](repeating: 0, count: 4)
        var count = 0
        for byte in bytes {
            precondition(count < 32, "a SHA-256 digest is 32 bytes")
            words[count >> 3] = words[count >> 3] << 8 | UInt64(byte)
            count += 1
        }
        precondition(count == 32, "a SHA-256 digest is 32 bytes")
        self.words = (words[0], words[1], words[2], words[3])
    }

    package init(_ digest: SHA256.Digest) {
        self.init(bytes: digest)
    }

    /// The 32 bytes of the digest at `offset` in `bytes` (which holds them).
    init(reading bytes: UnsafeRawBufferPointer, at offset: Int) {
        func word(_ index: Int) -> UInt64 {
            UInt64(bigEndian: bytes.loadUnaligned(fromByteOffset: offset + index * 8, as: UInt64.self))
        }
        words = (word(0), word(1), word(2), word(3))
    }

    package static func == (left: SHA256Value, right: SHA256Value) -> Bool {
        left.words == right.words
    }

    package func hash(into hasher: inout Hasher) {
        hasher.combine(words.0)
        hasher.combine(words.1)
        hasher.combine(words.2)
        hasher.combine(words.3)
    }

    /// The 32 bytes, in order.
    package var bytes: [UInt8] {
        [words.0, words.1, words.2, words.3].flatMap { word in (0..<8).map { UInt8(truncatingIfNeeded: word >> UInt64(56 - 8 * $0)) } }
    }

    /// 64 lowercase hexadecimal digits.
    package var description: String {
        let digits = Array("0123456789abcdef".utf8)
        return String(decoding: bytes.flatMap { [digits[Int($0 >> 4)], digits[Int($0 & 15)]] }, as: UTF8.self)
    }
}
