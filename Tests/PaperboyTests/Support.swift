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

