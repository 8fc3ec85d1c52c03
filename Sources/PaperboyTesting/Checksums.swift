import Crypto
import Foundation

/// The SHA-256 of `data` as 64 lowercase hexadecimal digits.
public func sha256Hex(_ data: Data) -> String {
    SHA256.hash(data: data).map { String(format: "%02x", $0) }.joined()
}

/// The SHA-256 of the file at `url`, read in chunks (memory stays flat).
public func sha256Hex(ofFileAt url: URL) throws -> String {
    let handle = try FileHandle(forReadingFrom: url)
    defer { try? handle.close() }
    var hasher = SHA256()
    while let chunk = try handle.read(upToCount: 1 << 20), !chunk.isEmpty {
        hasher.update(data: chunk)
    }
    return hasher.finalize().map { String(format: "%02x", $0) }.joined()
}

/// Bytes compared for a test without a collection diff: `#expect(Bytes(a) == Bytes(b))`.
///
/// A failed `#expect(data == other)` makes Swift Testing compute the difference of two byte
/// collections, which takes minutes for a few megabytes in a debug build and holds a thread of
/// the cooperative pool all that time (every other test's timeout then fires). This compares
/// the bytes and, on failure, prints their count and SHA-256 instead.
public struct Bytes: Equatable, CustomStringConvertible, Sendable {
    private let data: Data

    /// The bytes of `data` (a `Data`, a slice of one, `[UInt8]`…).
    public init(_ data: some DataProtocol) { self.data = Data(data) }

    public var description: String { "\(data.count) bytes, SHA-256 \(sha256Hex(data).prefix(16))…" }
}
