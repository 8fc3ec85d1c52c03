import Foundation
import Synchronization

/// A temporary folder, removed when the value is released.
public final class TempFolder: @unchecked Sendable {
    /// The folder.
    public let url: URL

    /// Creates a new, empty folder under the system's temporary folder.
    public convenience init(prefix: String = "paperboy-test") {
        self.init(prefix: prefix, in: FileManager.default.temporaryDirectory)
    }

    /// Creates a new, empty folder in `parent` (a file system of the test's choice).
    public init(prefix: String = "paperboy-test", in parent: URL) {
        url = parent.appendingPathComponent("\(prefix)-\(UUID().uuidString)")
        try! FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(at: url) }

    /// A path inside the folder.
    public func file(_ name: String) -> URL { url.appendingPathComponent(name) }
}

/// A small seeded random number generator (SplitMix64), for generated test data and for
/// randomized tests that print their seed so a failure can be replayed.
public struct SplitMix64: RandomNumberGenerator, Sendable {
    private var state: UInt64

    /// A generator whose sequence is fixed by `seed`.
    public init(seed: UInt64) { state = seed }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// Deterministic pseudo-random bytes (SplitMix64): test data is generated, never committed.
///
/// Made once per size and seed in a test process (up to 256 MiB in all) and shared, copy on
/// write: suites hold a few MB each per test, and generating them again for every test, on
/// the cooperative pool in a debug build, kept its two threads busy long enough to delay
/// other tests' timed steps by seconds.
public func randomData(_ count: Int, seed: UInt64 = 42) -> Data {
    let key = RandomDataKey(count: count, seed: seed)
    if let made = randomDataMade.withLock({ $0.data[key] }) { return made }
    var generator = SplitMix64(seed: seed)
    func next() -> UInt64 { generator.next() }
    var data = Data(count: count)
    data.withUnsafeMutableBytes { buffer in
        let words = buffer.bindMemory(to: UInt64.self)
        for index in words.indices { words[index] = next() }
        for index in (words.count * 8)..<count { buffer[index] = UInt8(truncatingIfNeeded: next()) }
    }
    randomDataMade.withLock { made in
        guard made.bytes + count <= 256 << 20, made.data[key] == nil else { return }
        made.data[key] = data
        made.bytes += count
    }
    return data
}

private struct RandomDataKey: Hashable {
    let count: Int
    let seed: UInt64
}

private let randomDataMade = Mutex<(data: [RandomDataKey: Data], bytes: Int)>(([:], 0))
