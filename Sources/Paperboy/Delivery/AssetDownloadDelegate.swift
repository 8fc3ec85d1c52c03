import Foundation

/// Receives the events of one asset download: the callback trio, failure and authentication.
///
/// Every method has a default, so new ones can be added without breaking anybody.
///
/// ## Ordering
/// Calls for one asset never overlap and arrive in this order:
/// ``download(_:didResumeAt:expectedTotalBytes:)`` at most once per transfer that continues
/// from a non-zero offset (a delegate attached after the transfer resumed gets it on attaching,
/// if it is the first one); ``download(_:didWriteData:totalBytesWritten:expectedTotalBytes:)``
/// coalesced to a bounded rate (see ``Library/Configuration/progressInterval``), always with a
/// final one when the last byte arrives; then exactly one of
/// ``download(_:didFinishDownloadingTo:)`` or ``download(_:didFailWithError:)``.
/// ``download(_:didReceive:)`` and ``download(_:willResumeWith:)`` may come at any time before.
///
/// The library keeps a strong reference to the delegate until the download finishes or fails.
public protocol AssetDownloadDelegate: Sendable {
    /// Bytes arrived. `bytesWritten` counts the bytes since the previous call.
    func download(_ asset: AssetDownload, didWriteData bytesWritten: Int64, totalBytesWritten: Int64, expectedTotalBytes: Int64?)

    /// A transfer continues from bytes already on disk.
    func download(_ asset: AssetDownload, didResumeAt totalBytesWritten: Int64, expectedTotalBytes: Int64?)

    /// The file is complete (and matched its SHA-256, if one was given).
    ///
    /// `destinationURL` is a temporary file valid only during this call: move it to keep it.
    /// If the request has a destination path and the file is still there when this returns,
    /// the library moves it there; otherwise it is deleted. Until this returns, the file waits in
    /// the library's inbox and is delivered again after a crash or relaunch (at least once), a
    /// kill inside this call included.
    ///
    /// - Throws: to keep the file in the inbox for a later delivery.
    func download(_ asset: AssetDownload, didFinishDownloadingTo destinationURL: URL) async throws

    /// The download gave up (the error says whether it is worth trying again later).
    func download(_ asset: AssetDownload, didFailWithError error: LibraryError)

    /// The transport needs credentials or a trust decision that configuration did not give.
    ///
    /// The default performs default handling (which refuses untrusted servers).
    func download(_ asset: AssetDownload, didReceive challenge: AuthChallenge) async -> AuthChallengeDisposition

    /// A transfer is about to continue from partial bytes; return a refreshed request (for
    /// example a new presigned URL) or the same one.
    ///
    /// The partial bytes are kept only if the source still reports the same validator.
    func download(_ asset: AssetDownload, willResumeWith request: AssetRequest) async -> AssetRequest
}

extension AssetDownloadDelegate {
    public func download(_ asset: AssetDownload, didWriteData bytesWritten: Int64, totalBytesWritten: Int64, expectedTotalBytes: Int64?) {}
    public func download(_ asset: AssetDownload, didResumeAt totalBytesWritten: Int64, expectedTotalBytes: Int64?) {}
    public func download(_ asset: AssetDownload, didFinishDownloadingTo destinationURL: URL) async throws {}
    public func download(_ asset: AssetDownload, didFailWithError error: LibraryError) {}
    public func download(_ asset: AssetDownload, didReceive challenge: AuthChallenge) async -> AuthChallengeDisposition {
        .performDefaultHandling
    }
    public func download(_ asset: AssetDownload, willResumeWith request: AssetRequest) async -> AssetRequest { request }
}

/// One event of an asset download, as delivered by ``AssetDownload/events()``; events compare
/// with `==` (errors as ``LibraryError`` compares them).
public enum DownloadEvent: Sendable, Equatable {
    /// Bytes arrived (coalesced): bytes since the previous event, total on disk, expected total.
    case progress(bytesWritten: Int64, totalBytesWritten: Int64, expectedTotalBytes: Int64?)
    /// A transfer continues from bytes already on disk.
    case resumed(totalBytesWritten: Int64, expectedTotalBytes: Int64?)
    /// The file is complete. It exists until the next call to the iterator's `next()`.
    case finished(URL)
    /// The download gave up.
    case failed(LibraryError)
}

/// Library-wide events, from ``Library/events()``; equal when they name the same issue or asset
/// (of the same library) and state.
public enum LibraryEvent: Sendable, Hashable {
    /// Every asset of the issue has been delivered (the analog of NKIssueDownloadCompletedNotification).
    case issueDownloadCompleted(Issue)
    /// An asset changed state.
    case assetStateChanged(AssetDownload, AssetState)
}
