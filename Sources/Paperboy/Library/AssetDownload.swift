import Foundation
import Synchronization

/// One asset of one issue: the analog of NKAssetDownload.
///
/// A handle with a stable ``identifier``: keep the identifier, not the handle, across launches.
/// Its methods work the same in-process and through a daemon; its properties are in-process
/// conveniences that read the library's live state (through a daemon, what the daemon last
/// reported, never waiting for it).
public struct AssetDownload: Sendable, Hashable, CustomStringConvertible {
    /// Stable across launches.
    public let identifier: String
    /// The name of the issue this asset belongs to (no read of the library).
    public let issueName: String
    let backend: any LibraryBackend

    package init(identifier: String, issueName: String, backend: any LibraryBackend) {
        self.identifier = identifier
        self.issueName = issueName
        self.backend = backend
    }

    /// The scheduler of an in-process library; `nil` through a daemon.
    var scheduler: Scheduler? { (backend as? LocalBackend)?.scheduler }

    /// The issue this asset belongs to.
    public var issue: Issue? { backend.lastKnownIssue(named: issueName) }

    /// The issue this asset belongs to (`nil` once removed).
    ///
    /// - Throws: ``LibraryError`` when a daemon cannot be reached.
    public func issue() async throws(LibraryError) -> Issue? {
        try await backend.issue(named: issueName)
    }

    /// What is downloaded (as last refreshed by ``AssetDownloadDelegate/download(_:willResumeWith:)``).
    public var request: AssetRequest? { backend.lastKnownStatus(ofAsset: identifier)?.request }

    /// The app's JSON data given to ``Issue/addAsset(_:userInfo:)``.
    public var userInfo: JSONValue? { backend.lastKnownUserInfo(ofAsset: identifier) }

    /// Where the asset is, and why it waits when it waits; ``AssetState/cancelled`` once it is
    /// no longer in the library.
    public var state: AssetState { backend.lastKnownStatus(ofAsset: identifier)?.state ?? .cancelled }

    /// The progress count: bytes of the file fetched and kept so far, from which a transfer
    /// continues.
    ///
    /// The whole size once finished, and still after delivery; `0` after a cancel, before the
    /// first byte, and after a failure that kept nothing (a 404, a refused credential, a checksum
    /// mismatch discards the bytes); for another failure, the bytes kept to resume from. While a
    /// transfer runs it can be ahead of what is durable on disk. To know what the asset occupies
    /// in the library's own folders now, read ``bytesOnDisk``.
    public var totalBytesWritten: Int64 { backend.lastKnownStatus(ofAsset: identifier)?.totalBytesWritten ?? 0 }

    /// Bytes this asset occupies in the library's own folders now, read from the disk: its
    /// partial file (the bytes a transfer resumes from) while it is not finished, or its finished
    /// file while that waits in the inbox.
    ///
    /// `0` when the asset holds nothing there: never started, cancelled, delivered (the file then
    /// belongs to the issue folder or to the app), or failed without keeping a byte (a 404, a
    /// refused credential, a checksum mismatch: no empty partial file is left behind). Always `0`
    /// through a daemon, whose folders this process does not read.
    public var bytesOnDisk: Int64 {
        guard let layout = scheduler?.layout else { return 0 }
        let partial = POSIX.regularFileSize(layout.partialURL(asset: identifier)) ?? 0
        guard let request else { return partial }
        return partial + (POSIX.regularFileSize(layout.inboxURL(asset: identifier, request: request)) ?? 0)
    }

    /// The total size, once the source has told it.
    public var expectedTotalBytes: Int64? { backend.lastKnownStatus(ofAsset: identifier)?.expectedTotalBytes }

    /// A snapshot of the asset: state, progress, attempts and failure, read at once.
    ///
    /// - Throws: ``LibraryError`` `.assetNotFound` when the library no longer has it, or when a
    ///   daemon cannot be reached.
    public func status() async throws(LibraryError) -> AssetStatus {
        try await backend.status(ofAsset: identifier)
    }

    /// Starts the download, or reconnects to it (after a relaunch, for example).
    ///
    /// Safe to call in any state: a running transfer keeps running and `delegate` is added to
    /// it; a finished file waiting in the inbox is delivered to `delegate`; a failed, paused or
    /// cancelled asset starts again (from the bytes on disk when it can).
    ///
    /// Delegates already attached stay attached (a ``pause()`` keeps them), whether or not
    /// `delegate` is given: `download()` alone resumes a paused asset for them. Attaching an
    /// object that is attached already changes nothing, so every call still comes once; a
    /// value type has no identity, and each attachment of one gets its own calls.
    ///
    /// If the transfer continued from bytes on disk before any delegate was attached (an
    /// interrupted download resuming when the library opens), the first delegate attached gets
    /// ``AssetDownloadDelegate/download(_:didResumeAt:expectedTotalBytes:)`` with that offset,
    /// before any progress.
    ///
    /// Returns once the library's database has recorded that the asset is asked for: killed
    /// after that, the relaunched library lists it in ``Library/downloadingAssets()``.
    ///
    /// - Throws: ``LibraryError`` when a daemon cannot be reached; `.storage` when the database
    ///   cannot record the change (the download goes on, and fails with the same error unless
    ///   the database recovers).
    public func download(delegate: (any AssetDownloadDelegate)? = nil) async throws(LibraryError) {
        try await backend.download(self, delegate: delegate)
    }

    /// Waits until the asset is delivered, fails, or is cancelled, and says which, once the
    /// library's database has recorded it (a kill after that finds it so at the relaunch).
    ///
    /// Returns at once for an asset that already ended; an idle or paused asset is waited for
    /// until it is started and ends. Cancelling the waiting task ends the wait only: the
    /// download goes on. To wait with a deadline, race this against `Task.sleep` in a task group.
    ///
    /// - Returns: `.closed` if the library closes first (or its daemon goes away).
    /// - Throws: `CancellationError` when the waiting task is cancelled.
    public func waitUntilFinished() async throws(CancellationError) -> AssetOutcome {
        try await backend.waitUntilFinished(asset: identifier)
    }

    /// Starts or reconnects, delivering the events as an asynchronous sequence; returns once the
    /// change is recorded, as ``download(delegate:)`` does.
    ///
    /// The sequence ends after `.finished` or `.failed`. The file of `.finished` exists until the
    /// next call to `next()`; until then, it is still in the inbox and survives a crash.
    ///
    /// - Throws: ``LibraryError`` when a daemon cannot be reached.
    public func events() async throws(LibraryError) -> DownloadEvents {
        try await backend.events(of: self)
    }

    /// Changes the SHA-256 the file must have (`nil`: none), as when a publisher corrects a
    /// checksum: a failed asset then downloads again under the new one with its next
    /// ``download(delegate:)``, and a running transfer stops, keeping its bytes, and starts
    /// again under it. A delivered asset is left as it is.
    ///
    /// - Throws: ``LibraryError`` `.invalidRequest` for a checksum that is not 64 hexadecimal
    ///   digits, or when the file is already verified and being delivered; `.assetNotFound`.
    public func updateExpectedSHA256(_ sha256: String?) async throws(LibraryError) {
        try await backend.updateExpectedSHA256(sha256, ofAsset: identifier)
    }

    /// Stops the transfer, keeping the bytes; ``resume()`` or ``download(delegate:)`` continues it.
    ///
    /// Returns once the pause is recorded, possibly before the transfer has stopped (its state
    /// says `.downloading` until then): killed after that, the relaunched library keeps the
    /// asset paused.
    ///
    /// - Throws: ``LibraryError`` when a daemon cannot be reached; `.storage` when the database
    ///   cannot record the pause.
    public func pause() async throws(LibraryError) { try await backend.pause(asset: identifier) }

    /// Continues the asset with the delegates it has, as ``download(delegate:)`` without a
    /// delegate does: a paused transfer goes on from its bytes; a failed or cancelled asset starts
    /// again. An asset no longer in the library is left alone.
    ///
    /// Returns once the change is recorded, as ``download(delegate:)`` does.
    ///
    /// - Throws: ``LibraryError`` when a daemon cannot be reached; `.storage` when the database
    ///   cannot record the change.
    public func resume() async throws(LibraryError) { try await backend.resume(asset: identifier) }

    /// Stops the transfer and removes its partial bytes; delegates get a `.cancelled` failure
    /// once the cancel is recorded.
    ///
    /// Returns once the cancel is recorded, possibly before the transfer has stopped: killed
    /// after that, the relaunched library keeps the asset cancelled and removes its bytes.
    ///
    /// - Throws: ``LibraryError`` when a daemon cannot be reached; `.storage` when the database
    ///   cannot record the cancel.
    public func cancel() async throws(LibraryError) { try await backend.cancel(asset: identifier) }

    public var description: String { "AssetDownload(\(identifier))" }

    /// The same asset of the same library (backend object).
    public static func == (lhs: AssetDownload, rhs: AssetDownload) -> Bool {
        lhs.identifier == rhs.identifier && lhs.backend === rhs.backend
    }

    public func hash(into hasher: inout Hasher) { hasher.combine(identifier) }
}

/// The events of one download as an `AsyncSequence` (see ``AssetDownload/events()``).
public struct DownloadEvents: AsyncSequence, Sendable {
    public typealias Element = DownloadEvent

    struct Envelope: Sendable {
        var event: DownloadEvent
        var acknowledge: (@Sendable () -> Void)?
    }

    let stream: AsyncStream<Envelope>

    /// The events of a delegate that `attach` attaches (to a download, by a backend).
    package static func attached(_ attach: (any AssetDownloadDelegate) -> Void) -> DownloadEvents {
        let (stream, continuation) = AsyncStream.makeStream(of: Envelope.self)
        let adapter = StreamDelegate(continuation: continuation)
        continuation.onTermination = { _ in adapter.releaseAll() }
        attach(adapter)
        return DownloadEvents(stream: stream)
    }

    public func makeAsyncIterator() -> Iterator {
        Iterator(base: stream.makeAsyncIterator())
    }

    /// Iterates the events; asking for the next one releases the previous `.finished` file.
    public struct Iterator: AsyncIteratorProtocol {
        var base: AsyncStream<Envelope>.Iterator
        var pending: (@Sendable () -> Void)?

        public mutating func next() async -> DownloadEvent? {
            pending?()
            pending = nil
            guard let envelope = await base.next() else { return nil }
            pending = envelope.acknowledge
            return envelope.event
        }
    }
}

/// Turns delegate calls into stream elements; `didFinish` waits until the consumer moves on.
final class StreamDelegate: AssetDownloadDelegate {
    let continuation: AsyncStream<DownloadEvents.Envelope>.Continuation
    private let waiting = Mutex<[Int: CheckedContinuation<Void, Never>]>([:])
    private let counter = Mutex<Int>(0)

    init(continuation: AsyncStream<DownloadEvents.Envelope>.Continuation) {
        self.continuation = continuation
    }

    func download(_ asset: AssetDownload, didWriteData bytesWritten: Int64, totalBytesWritten: Int64, expectedTotalBytes: Int64?) {
        continuation.yield(.init(event: .progress(bytesWritten: bytesWritten, totalBytesWritten: totalBytesWritten, expectedTotalBytes: expectedTotalBytes)))
    }

    func download(_ asset: AssetDownload, didResumeAt totalBytesWritten: Int64, expectedTotalBytes: Int64?) {
        continuation.yield(.init(event: .resumed(totalBytesWritten: totalBytesWritten, expectedTotalBytes: expectedTotalBytes)))
    }

    func download(_ asset: AssetDownload, didFinishDownloadingTo destinationURL: URL) async throws {
        let key = counter.withLock { value in
            value += 1
            return value
        }
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            waiting.withLock { $0[key] = done }
            let result = continuation.yield(.init(event: .finished(destinationURL), acknowledge: { [weak self] in
                self?.release(key)
            }))
            if case .terminated = result { release(key) }
        }
        continuation.finish()
    }

    func download(_ asset: AssetDownload, didFailWithError error: LibraryError) {
        continuation.yield(.init(event: .failed(error)))
        continuation.finish()
    }

    private func release(_ key: Int) {
        waiting.withLock { $0.removeValue(forKey: key) }?.resume()
    }

    func releaseAll() {
        let all = waiting.withLock { waiting in
            defer { waiting = [:] }
            return Array(waiting.values)
        }
        for continuation in all { continuation.resume() }
    }
}
