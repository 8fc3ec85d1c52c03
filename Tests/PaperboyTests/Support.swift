import Foundation
import Testing
@testable import Paperboy
import PaperboyTesting

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
