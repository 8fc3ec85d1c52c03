import Foundation
@testable import Paperboy
import Testing

/// ``MD4`` against the test suite of RFC 1320 (appendix A.5), and zsync's zero padding.
@Suite("MD4")
struct MD4Tests {
    static func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

    @Test(arguments: [
        ("", "31d6cfe0d16ae931b73c59d7e0c089c0"),
        ("a", "bde52cb31de33e46245e05fbdbd6fb24"),
        ("abc", "a448017aaf21d8525fc10ae87aa6729d"),
        ("message digest", "d9130a8164549fe818874806e1c7014b"),
        ("abcdefghijklmnopqrstuvwxyz", "d79e1c308aa5bbcdeea8ed63df412da9"),
        ("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", "043f8582f241db351ce627e153e7f0e4"),
        ("12345678901234567890123456789012345678901234567890123456789012345678901234567890", "e33b4ddc9c38f2199c3e7b164fcc0536"),
    ])
    func theRFCTestSuite(_ message: String, _ digest: String) {
        #expect(Self.hex(MD4.digest(Array(message.utf8))) == digest, "MD4(\"\(message)\")")
    }

    /// A short block padded with zeros hashes as the zeros written out, at every length around
    /// the 55/56/64-byte edges of MD4's own padding.
    @Test func zeroPaddingIsTheZerosWrittenOut() {
        for (count, padded) in [(3, 100), (55, 56), (56, 64), (60, 64), (64, 128), (100, 2048), (2048, 2048), (5, 0)] {
            let bytes = (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
            let written = bytes + [UInt8](repeating: 0, count: max(0, padded - count))
            let digest = bytes.withUnsafeBytes { MD4.digest($0, zeroPaddedTo: padded) }
            #expect(digest == MD4.digest(written), "\(count) bytes padded to \(padded)")
        }
    }
}
