import Foundation

/// One request handed to a ``Transport``: what to fetch and where to continue from.
public struct TransferJob: Sendable {
    /// The source URL. Plain paths are turned into `file:` URLs before they reach a transport.
    public var url: URL
    /// Extra request headers (meaningful to transports that have headers).
    public var headers: [String: String]
    /// Bytes already safely on disk: the transport should continue from here (0 = from the start).
    public var offset: Int64
    /// The validator recorded when the partial bytes began, if any.
    ///
    /// A transport that can make the resume conditional sends it to the source; the core
    /// compares it again when ``TransferSink/begin(_:)`` reports the current one.
    public var validator: ResourceValidator?
    /// Time allowed to establish a connection.
    public var connectTimeout: Duration
    /// Time without any byte after which the transfer is abandoned as stalled.
    public var idleTimeout: Duration
    /// Transport-specific options (for example a CA file), keyed by option name.
    public var options: [String: String]
    /// Connections the transport may use at once for this one resource (at least 1): a transport
    /// with ``TransportCapabilities/segments`` may split a large resource over them, through sink
    /// segments (``Library/Configuration/connectionsPerAsset``). Always 1 with a ``rangeEnd``.
    public var connectionsPerAsset: Int = 1
    /// For a transport with ``TransportCapabilities/ranges``: the end (exclusive) of the one range
    /// `offset..<rangeEnd` to fetch, sent whatever ``validator`` is (`If-Range` when there is
    /// one); `nil` fetches from `offset` to the end of the resource. The transport reports the
    /// bytes the source sends in ``TransferResponse/offset`` and ``TransferResponse/end``, and
    /// the library refuses any other answer before a byte is written. A transport without
    /// `.ranges` never gets one.
    public var rangeEnd: Int64?
    /// Ranges past ``offset`` the library already holds (ordered, disjoint): written, made
    /// durable and recorded with ``validator`` by an earlier transfer of several connections.
    /// A transport that fetches ranges in parallel skips them when the source continues at
    /// ``offset`` with that validator (``TransferResponse/keepsHeldRanges(of:)``); one that does
    /// not writes over them (the sink then forgets them).
    package var heldRanges: [Range<Int64>] = []
    /// Other URLs serving the same bytes as ``url`` (``AssetRequest/mirrors``), in the order given.
    ///
    /// A transport that fetches ranges over several connections may fetch pieces from them; one
    /// that cannot ignores them. A mirror's answer must carry the same length and validator as
    /// ``url``'s, or nothing of it is written. Credentials are answered per URL through
    /// ``TransferSink/challenge(_:)``: an answer given for ``url`` is never sent to a mirror.
    public var mirrors: [URL] = []
    /// The identifier of the asset this job belongs to, for logs.
    public var assetIdentifier: String

    /// Creates a job.
    public init(
        url: URL,
        headers: [String: String] = [:],
        offset: Int64 = 0,
        validator: ResourceValidator? = nil,
        connectTimeout: Duration = .seconds(30),
        idleTimeout: Duration = .seconds(60),
        options: [String: String] = [:],
        assetIdentifier: String = ""
    ) {
        self.url = url
        self.headers = headers
        self.offset = offset
        self.validator = validator
        self.connectTimeout = connectTimeout
        self.idleTimeout = idleTimeout
        self.options = options
        self.assetIdentifier = assetIdentifier
    }
}

/// Identifies one version of a remote resource, so that bytes of two versions are never spliced.
public struct ResourceValidator: Sendable, Hashable, Codable, CustomStringConvertible {
    /// How much a validator can be trusted to identify a version.
    public enum Strength: String, Sendable, Hashable, Codable {
        /// Byte-for-byte identity (a strong ETag, size + mtime + inode of a local file).
        case strong
        /// Probably the same version (Last-Modified, a weak ETag).
        case weak
    }

    /// An opaque value, compared for equality (for example `etag:"abc"`).
    public var value: String
    /// How much the value can be trusted.
    public var strength: Strength

    /// Creates a validator.
    public init(_ value: String, strength: Strength) {
        self.value = value
        self.strength = strength
    }

    public var description: String { "\(value) (\(strength.rawValue))" }
}

/// What the source promised, reported once by a transport through ``TransferSink/begin(_:)``.
public struct TransferResponse: Sendable, Hashable {
    /// The offset the source really continues from: `0` when it sends the whole resource.
    public var offset: Int64
    /// The total length of the resource in bytes, when known.
    public var expectedLength: Int64?
    /// The validator of the version being sent, when the source has one.
    public var validator: ResourceValidator?
    /// The end (exclusive) of the bytes the source sends, when it stops before the resource's
    /// end: the answer to a job's ``TransferJob/rangeEnd`` (an HTTP 206); `nil` when it sends
    /// everything from ``offset`` on.
    public var end: Int64?

    /// Whether the ranges `job` says the library holds (``TransferJob/heldRanges``) are bytes of
    /// this answer: the source continues where the job asked, with the job's validator. The one
    /// rule for the transport that skips them and the sink that keeps them.
    package func keepsHeldRanges(of job: (offset: Int64, validator: ResourceValidator?)) -> Bool {
        job.validator != nil && offset == job.offset && validator == job.validator
    }

    /// Creates a response.
    public init(offset: Int64, expectedLength: Int64?, validator: ResourceValidator?) {
        self.offset = offset
        self.expectedLength = expectedLength
        self.validator = validator
    }

    /// Creates the response to a job with a ``TransferJob/rangeEnd``: the source sends
    /// `offset..<end` of a resource of `expectedLength` bytes.
    public init(offset: Int64, end: Int64?, expectedLength: Int64?, validator: ResourceValidator?) {
        self.init(offset: offset, expectedLength: expectedLength, validator: validator)
        self.end = end
    }
}
