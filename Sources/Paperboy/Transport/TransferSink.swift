import Foundation

/// Where a ``Transport`` pushes the bytes of one transfer. The core owns it.
///
/// The core's sink writes to the partial file, counts bytes, applies the bandwidth limiter,
/// hashes, checkpoints progress durably and emits coalesced progress. Test sinks
/// (`PaperboyTesting`) record what a transport did instead.
///
/// Rules, in order: ``begin(_:)`` exactly once before any data; then ``write(_:)`` (or
/// ``tryWrite(_:)``) with consecutive chunks; ``challenge(_:)`` at any time. Methods are safe to
/// call from any thread, but calls for one transfer must not overlap. A transport fetching
/// ranges in parallel may ask for ``segment(_:)`` writers after `begin`.
public protocol TransferSink: AnyObject, Sendable {
    /// Records what the source promised.
    ///
    /// - Throws: ``TransferRestart`` when the core wants the transfer redone from offset 0
    ///   (the honoured offset or validator does not match the bytes on disk); transports rethrow it.
    func begin(_ response: TransferResponse) throws

    /// Accepts one chunk, suspending while the core pushes back (bandwidth limit, slow disk).
    ///
    /// The buffer is only read during the call. A suspended `write` means: pause the source.
    func write(_ bytes: UnsafeRawBufferPointer) async throws

    /// Accepts one chunk without suspending, for transports that run C callbacks on their own
    /// thread (libcurl, libssh2).
    ///
    /// - Returns: `true` if the whole chunk was taken; `false` if nothing was taken because the
    ///   core pushes back: pause the source and offer the same bytes again once the callback
    ///   given to ``whenWritable(_:)`` runs.
    func tryWrite(_ bytes: UnsafeRawBufferPointer) throws -> Bool

    /// Calls `callback` once, from any thread, as soon as ``tryWrite(_:)`` may accept bytes again.
    func whenWritable(_ callback: @escaping @Sendable () -> Void)

    /// Asks for credentials or a trust decision, answered from configuration or the app's delegate.
    ///
    /// The core's sinks answer at most 16 challenges per attempt; later ones are answered
    /// `.cancelAuthenticationChallenge`, the attempt is cancelled, and it fails with a
    /// non-retryable `.authenticationFailed` error.
    func challenge(_ challenge: AuthChallenge) async -> AuthChallengeDisposition

    /// A writer for the bytes `range` of the resource, for transports that fetch ranges of one
    /// resource in parallel (for example over two connections); `nil` when this sink writes
    /// sequentially only (the default), in which case the transport fetches sequentially.
    ///
    /// Ask after ``begin(_:)`` reported a known `expectedLength`. The range must be non-empty,
    /// end at or before the expected length, start at or after the bytes written sequentially so
    /// far, and not overlap another segment. From then on ``write(_:)`` and ``tryWrite(_:)``
    /// accept bytes only up to the lowest segment start above their position; each segment
    /// accepts its range's bytes in order, from its lower bound. Calls to the sink and to all its
    /// segments must not overlap one another (serialize them; the sink's work is a `pwrite`).
    /// Every segment must be complete when the transport returns.
    ///
    /// The core counts segment bytes in progress and in the bandwidth limits, and records as
    /// resumable, after making them durable at each checkpoint, the prefix of the file written
    /// without gaps and the segment bytes past it: the next job carries those as
    /// `TransferJob.heldRanges` (package). After a crash, segment bytes written since the last
    /// checkpoint are fetched again. Bytes are never
    /// spliced from two versions: the validator of ``begin(_:)`` covers every segment.
    ///
    /// - Throws: a ``TransportError`` (`.protocolError`, not retryable) for a range that breaks
    ///   these rules, or when called before `begin` or without a known length.
    func segment(_ range: Range<Int64>) throws -> (any TransferSegment)?
}

extension TransferSink {
    /// Sinks write sequentially only unless they say otherwise.
    public func segment(_ range: Range<Int64>) throws -> (any TransferSegment)? { nil }
}

/// Accepts the bytes of one range of a transfer, in order, for a transport that fetches
/// ranges in parallel. Handed out by ``TransferSink/segment(_:)``.
///
/// The methods mean what the sink's do (back-pressure included); bytes land at
/// `range.lowerBound` plus the bytes already accepted by this segment.
public protocol TransferSegment: AnyObject, Sendable {
    /// The bytes of the resource this segment accepts.
    var range: Range<Int64> { get }
    /// Accepts the next chunk of the range, suspending while the core pushes back.
    func write(_ bytes: UnsafeRawBufferPointer) async throws
    /// Accepts the next chunk without suspending; `false` means nothing was taken: offer it again
    /// once the callback given to ``whenWritable(_:)`` runs.
    func tryWrite(_ bytes: UnsafeRawBufferPointer) throws -> Bool
    /// Calls `callback` once, from any thread, as soon as ``tryWrite(_:)`` may accept bytes again.
    func whenWritable(_ callback: @escaping @Sendable () -> Void)
}

extension TransferSink {
    /// Accepts one chunk held in `Data` (convenience over ``write(_:)``).
    public func write(_ data: Data) async throws {
        // Data only lends its bytes to a synchronous closure: copy them once for the async call.
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: data.count, alignment: 16)
        defer { buffer.deallocate() }
        _ = data.copyBytes(to: buffer.bindMemory(to: UInt8.self))
        try await write(UnsafeRawBufferPointer(buffer))
    }
}

/// Thrown by ``TransferSink/begin(_:)`` when the bytes on disk cannot be continued.
///
/// Transports rethrow it unchanged; the core truncates the partial file and runs the job again
/// from offset 0 without counting a failed attempt.
public struct TransferRestart: Error, Sendable, CustomStringConvertible {
    /// Why the core restarts (for logs).
    public var reason: String
    /// Creates the error.
    public init(reason: String) { self.reason = reason }
    public var description: String { "restarting from zero: \(reason)" }
}
