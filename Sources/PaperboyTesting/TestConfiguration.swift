import Foundation
import Paperboy

extension Library.Configuration {
    /// A configuration as tests want it: quick retries, frequent progress, no syncs to disk,
    /// a wired network whatever the host's, and `clock` for every decision taken at a time.
    ///
    /// - Parameters:
    ///   - attempts: attempts without progress before an asset fails.
    ///   - idleTimeout: how long a transfer may go without a byte.
    ///   - clock: the library's clock; a ``TestClock`` makes retries and timeouts the test's to time.
    public static func forTests(attempts: Int = 3, idleTimeout: Duration = .seconds(10),
                                clock: any LibraryClock = SystemClock()) -> Library.Configuration {
        var configuration = Library.Configuration()
        configuration.retry = RetryPolicy(maxAttempts: attempts, baseDelay: .milliseconds(5), maxDelay: .milliseconds(20))
        configuration.progressInterval = .milliseconds(20)
        configuration.syncsToDisk = false
        configuration.idleTimeout = idleTimeout
        configuration.connectTimeout = .seconds(5)
        // Independent of the host's network: policies are tested on their own.
        configuration.networkMonitor = FixedNetworkMonitor(NetworkStatus(kind: .wired))
        configuration.clock = clock
        return configuration
    }
}

extension TransferJob {
    /// A job with short timeouts, as tests want them.
    public static func forTests(_ url: URL, offset: Int64 = 0, validator: ResourceValidator? = nil,
                                connectTimeout: Duration = .seconds(5), idleTimeout: Duration = .seconds(10)) -> TransferJob {
        TransferJob(url: url, offset: offset, validator: validator, connectTimeout: connectTimeout, idleTimeout: idleTimeout)
    }
}
