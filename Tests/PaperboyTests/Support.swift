import Foundation
import Testing
@testable import Paperboy
import PaperboyTesting

/// A temporary folder removed when the test ends.
final class TempFolder: @unchecked Sendable {
    let url: URL
    init() {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("paperboy-test-\(UUID().uuidString)")
        try! FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }
    deinit { try? FileManager.default.removeItem(at: url) }
    func file(_ name: String) -> URL { url.appendingPathComponent(name) }
}

func randomData(_ count: Int, seed: UInt64 = 42) -> Data {
    var generator = SplitMix(seed: seed)
    var data = Data(count: count)
    data.withUnsafeMutableBytes { buffer in
        let words = buffer.bindMemory(to: UInt64.self)
        for index in words.indices { words[index] = generator.next() }
        for index in (words.count * 8)..<count { buffer[index] = UInt8(truncatingIfNeeded: generator.next()) }
    }
    return data
}

struct SplitMix: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

func testConfiguration(attempts: Int = 3) -> Library.Configuration {
    var configuration = Library.Configuration()
    configuration.retry = RetryPolicy(maxAttempts: attempts, baseDelay: .milliseconds(5), maxDelay: .milliseconds(20))
    configuration.progressInterval = .milliseconds(20)
    configuration.syncsToDisk = false
    configuration.networkMonitor = FixedNetworkMonitor(NetworkStatus(kind: .wired))
    return configuration
}

/// Waits until `condition` holds, polling; fails the test after `timeout`.
func eventually(timeout: Duration = .seconds(20), _ what: String = "condition", _ condition: () -> Bool) async {
    let deadline = ContinuousClock.now + timeout
    while !condition() {
        if ContinuousClock.now > deadline {
            Testing.Issue.record("timed out waiting for \(what)")
            return
        }
        try? await Task.sleep(for: .milliseconds(5))
    }
}
