/// How a download ended, as ``AssetDownload/waitUntilFinished()`` reports it.
public enum AssetOutcome: Sendable, Equatable {
    /// Handed over: moved to its destination path, unpacked, or taken by the app's delegate.
    case delivered
    /// Gave up (after its retries); ``AssetDownload/download(delegate:)`` tries again.
    ///
    /// After a relaunch, the error of a failure recorded before carries its message, with the
    /// code ``LibraryError/Code/transport``.
    case failed(LibraryError)
    /// Cancelled by the app (``AssetDownload/cancel()``), or removed with its issue.
    case cancelled
    /// The library was closed first; the download goes on when it opens again.
    case closed
}
