import Foundation

/// A way of fetching bytes for one or more URL schemes.
///
/// A transport turns a ``TransferJob`` into bytes pushed into a ``TransferSink`` that the core
/// owns. It never touches the destination file, the database, the bandwidth limiter or the
/// checksum: the core does that identically for every transport.
///
/// ## The contract
///
/// 1. Open the source described by `job`. If `job.offset > 0`, try to continue from that offset;
///    send `job.validator` to the source when the protocol can make the resume conditional
///    (HTTP `If-Range`), or compare it yourself.
/// 2. Call ``TransferSink/begin(_:)`` **exactly once, before any data**, saying what the source
///    promised: the offset really honoured (`0` when the source ignored the resume request or its
///    validator changed), the total length if known, and the current validator. `begin` may throw
///    (for example when the core decides to restart from zero): rethrow what it throws.
/// 3. Call ``TransferSink/write(_:)`` zero or more times with consecutive chunks. A `write` that
///    suspends is back-pressure: stop reading from the source until it returns. Never buffer
///    more than one chunk of your own. Transports driven by C callbacks on their own thread use
///    ``TransferSink/tryWrite(_:)`` and ``TransferSink/whenWritable(_:)`` instead.
/// 4. When the source needs credentials, call ``TransferSink/challenge(_:)``; it may be called
///    before the first byte and is answered asynchronously with an ``AuthChallengeDisposition``.
/// 5. Return normally when the source says the resource is complete. Throw a ``TransportError``
///    otherwise; its ``TransportError/isRetryable`` tells the scheduler whether another attempt
///    can help. Errors thrown by the sink must be rethrown unchanged.
///
/// Cancellation is Swift task cancellation: check `Task.isCancelled` between chunks, and stop
/// promptly (throwing `CancellationError` or a ``TransportError`` with code `.cancelled`).
///
/// Conforming types are values: set-up that can fail (a connection pool, an SSH session cache)
/// is created once, when the transport is made, or lazily, never per chunk.
public protocol Transport: Sendable {
    /// URL schemes this transport serves, lowercased (for example `["http", "https"]`).
    var schemes: Set<String> { get }

    /// What this transport can do; the scheduler reads it before choosing a resume offset.
    var capabilities: TransportCapabilities { get }

    /// Fetches the resource described by `job` into `sink`.
    ///
    /// - Parameters:
    ///   - job: what to fetch and from which offset.
    ///   - sink: where the bytes go; owned by the core.
    /// - Throws: a ``TransportError`` (or the error thrown by the sink, unchanged).
    func transfer(_ job: TransferJob, into sink: any TransferSink) async throws
}

/// What a transport can do.
public struct TransportCapabilities: OptionSet, Sendable, Hashable {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// The transport can continue a transfer from a non-zero offset.
    public static let resume = TransportCapabilities(rawValue: 1 << 0)
    /// The transport may ask for credentials or trust decisions through the sink.
    public static let challenges = TransportCapabilities(rawValue: 1 << 1)
    /// The transport reports a validator (ETag, mtime and size, …) that identifies a version.
    public static let validators = TransportCapabilities(rawValue: 1 << 2)
    /// The transport reads local resources only: network policies do not apply to it.
    public static let local = TransportCapabilities(rawValue: 1 << 3)
    /// The transport fetches one byte range of a resource: a job's ``TransferJob/offset`` up to
    /// its ``TransferJob/rangeEnd``, reporting in ``TransferSink/begin(_:)`` which bytes the
    /// source sends (``TransferResponse/end``). The library then fetches only the chunks of an
    /// indexed asset it does not hold (docs/ChunkIndex.md); without it, an indexed asset is
    /// fetched whole.
    public static let ranges = TransportCapabilities(rawValue: 1 << 4)
    /// The transport splits one large resource over the connections a job allows
    /// (``TransferJob/connectionsPerAsset``), writing the other pieces through sink segments
    /// (``TransferSink/segment(_:)``).
    public static let segments = TransportCapabilities(rawValue: 1 << 5)
}
