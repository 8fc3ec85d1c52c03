import Foundation
import Synchronization

/// One asset of one issue: the analog of NKAssetDownload.
///
/// A handle with a stable ``identifier``: keep the identifier, not the handle, across launches.
/// Its properties read the library's live state.
public struct AssetDownload: Sendable, Hashable, CustomStringConvertible {
    /// Stable across launches.
    public let identifier: String
    /// The name of the issue this asset belongs to (no read of the library).
    public let issueName: String
    let scheduler: Scheduler

    init(identifier: String, issueName: String, scheduler: Scheduler) {
        self.identifier = identifier
        self.issueName = issueName
        self.scheduler = scheduler
    }

    /// The issue this asset belongs to.
    public var issue: Issue? {
        scheduler.store.issue(named: issueName).map { Issue(record: $0, scheduler: scheduler) }
    }

    /// What is downloaded (as last refreshed by ``AssetDownloadDelegate/download(_:willResumeWith:)``).
    public var request: AssetRequest? {
        scheduler.snapshot(identifier)?.request ?? scheduler.store.asset(id: identifier)?.request
    }

    /// The app's JSON data given to ``Issue/addAsset(_:userInfo:)``.
    public var userInfo: JSONValue? {
        // Stored within the limits when added; checked again all the same: a row can be changed.
        let reader = JSONReader("userInfo of asset \(identifier) in the library's database",
                                limits: .appValue.with(maxBytes: max(scheduler.maxUserInfoBytes, JSONReader.Limits.appValue.maxBytes)))
        return scheduler.store.asset(id: identifier)?.userInfo.flatMap { try? reader.decode(JSONValue.self, from: $0) }
    }

    /// Where the asset is, and why it waits when it waits.
    public var state: AssetState {
        if let live = scheduler.snapshot(identifier) { return live.state }
        guard let record = scheduler.store.asset(id: identifier) else { return .cancelled }
        return Scheduler.publicState(PersistedState(rawValue: record.state) ?? .idle, retryAt: record.retryAt,
                                     attempts: record.attempts, detail: record.detail, now: scheduler.clock.now)
    }

    /// The progress count: bytes of the file fetched and kept so far, from which a transfer
    /// continues.
    ///
    /// The whole size once finished, and still after delivery; `0` after a cancel, before the
    /// first byte, and after a failure that kept nothing (a 404, a refused credential, a checksum
    /// mismatch discards the bytes); for another failure, the bytes kept to resume from. While a
    /// transfer runs it can be ahead of what is durable on disk. To know what the asset occupies
    /// in the library's own folders now, read ``bytesOnDisk``.
    public var totalBytesWritten: Int64 {
        if let live = scheduler.snapshot(identifier) { return live.written }
        return scheduler.store.asset(id: identifier)?.bytesOnDisk ?? 0
    }

    /// Bytes this asset occupies in the library's own folders now, read from the disk: its
    /// partial file (the bytes a transfer resumes from) while it is not finished, or its finished
    /// file while that waits in the inbox.
    ///
    /// `0` when the asset holds nothing there: never started, cancelled, delivered (the file then
    /// belongs to the issue folder or to the app), or failed without keeping a byte (a 404, a
    /// refused credential, a checksum mismatch: no empty partial file is left behind).
    public var bytesOnDisk: Int64 {
        let layout = scheduler.layout
        let partial = POSIX.regularFileSize(layout.partialURL(asset: identifier)) ?? 0
        guard let request else { return partial }
        return partial + (POSIX.regularFileSize(layout.inboxURL(asset: identifier, request: request)) ?? 0)
    }

    /// The total size, once the source has told it.
    public var expectedTotalBytes: Int64? {
        if let live = scheduler.snapshot(identifier) { return live.expected }
        return scheduler.store.asset(id: identifier)?.expectedBytes
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
    public func download(delegate: (any AssetDownloadDelegate)? = nil) {
        scheduler.download(self, delegate: delegate)
    }

    /// Waits until the asset is delivered, fails, or is cancelled, and says which.
    ///
    /// Returns at once for an asset that already ended; an idle or paused asset is waited for
    /// until it is started and ends. Cancelling the waiting task ends the wait only: the
    /// download goes on. To wait with a deadline, race this against `Task.sleep` in a task group.
    ///
    /// - Returns: `.closed` if the library closes first.
    /// - Throws: `CancellationError` when the waiting task is cancelled.
    public func waitUntilFinished() async throws(CancellationError) -> AssetOutcome {
        try await scheduler.waitUntilFinished(identifier)
    }

    /// Starts or reconnects, delivering the events as an asynchronous sequence.
    ///
    /// The sequence ends after `.finished` or `.failed`. The file of `.finished` exists until the
    /// next call to `next()`; until then, it is still in the inbox and survives a crash.
    public func events() -> DownloadEvents {
        let (stream, continuation) = AsyncStream.makeStream(of: DownloadEvents.Envelope.self)
        let adapter = StreamDelegate(continuation: continuation)
        continuation.onTermination = { _ in adapter.releaseAll() }
        download(delegate: adapter)
        return DownloadEvents(stream: stream)
    }

    /// Changes the SHA-256 the file must have (`nil`: none), as when a publisher corrects a
    /// checksum: a failed asset then downloads again under the new one with its next
    /// ``download(delegate:)``, and a running transfer stops, keeping its bytes, and starts
    /// again under it. A delivered asset is left as it is.
    ///
    /// - Throws: ``LibraryError`` `.invalidRequest` for a checksum that is not 64 hexadecimal
    ///   digits, or when the file is already verified and being delivered; `.assetNotFound`.
    public func updateExpectedSHA256(_ sha256: String?) throws(LibraryError) {
        try scheduler.updateChecksum(identifier, sha256: sha256)
    }

    /// Stops the transfer, keeping the bytes; ``download(delegate:)`` continues it.
    public func pause() { scheduler.pause(identifier) }

    /// Stops the transfer and removes its partial bytes; delegates get a `.cancelled` failure.
    public func cancel() { scheduler.cancel(identifier) }

    public var description: String { "AssetDownload(\(identifier))" }

    public static func == (lhs: AssetDownload, rhs: AssetDownload) -> Bool {
        lhs.identifier == rhs.identifier && lhs.scheduler === rhs.scheduler
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
