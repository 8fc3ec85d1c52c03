import Foundation

extension Library {
    /// Returns when none of the assets of the issues named `issues` is queued, downloading or
    /// being delivered, nor waits for a retry due within `retryWaitLimit` (and, with
    /// `includingNetworkWaits`, nor waits for an allowed network): what a sync waits for.
    /// Returns how many assets wait for an allowed network then.
    ///
    /// In process the library's scheduler is waited for as a whole (``waitUntilIdle(includingNetworkWaits:retryWaitLimit:)``:
    /// no per-asset work), and the count is the whole library's; through a daemon, the issues'
    /// assets are followed by their events and by reading the issues' pages (at least once a
    /// second), and the count is theirs.
    ///
    /// - Throws: ``LibraryError`` when the daemon cannot be read.
    package func waitUntilSettled(ofIssues issues: [String], includingNetworkWaits: Bool,
                                  retryWaitLimit: RetryWaitLimit?) async throws(LibraryError) -> Int {
        try await backend.waitUntilSettled(ofIssues: issues, includingNetworkWaits: includingNetworkWaits,
                                           retryWaitLimit: retryWaitLimit)
    }
}

extension LocalBackend {
    package func waitUntilSettled(ofIssues issues: [String], includingNetworkWaits: Bool,
                                  retryWaitLimit: RetryWaitLimit?) async -> Int {
        await scheduler.waitUntilIdle(includingNetworkWaits: includingNetworkWaits, retryWaitLimit: retryWaitLimit)
        // A failed read waits for nothing more: the caller's report says what is not delivered.
        return (try? store.networkWaitCount()) ?? 0
    }
}
