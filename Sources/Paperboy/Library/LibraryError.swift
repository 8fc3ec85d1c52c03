import Foundation

/// Why a library operation or a download failed.
///
/// A failure is a value: its ``code``, ``reason``, ``transportCode``, ``message`` and
/// ``isRetryable`` are decided once, where the error is made, and read back the same from the
/// library's database after a relaunch and from a daemon through `Library.connect`. Two errors are
/// equal (`==`, and hash alike) when those five are; ``underlying`` is for diagnostics in the process where the
/// failure happened and takes no part.
public struct LibraryError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A stable error code. New codes may be added: compare, don't switch exhaustively.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(_ rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// An issue name that cannot be a folder name.
        public static let invalidIssueName = Code("invalid-issue-name")
        /// An issue with that name already exists.
        public static let duplicateIssue = Code("duplicate-issue")
        /// No issue has that name.
        public static let issueNotFound = Code("issue-not-found")
        /// No asset has that identifier (it was removed).
        public static let assetNotFound = Code("asset-not-found")
        /// A path that would leave the issue folder, or is otherwise unusable.
        public static let invalidPath = Code("invalid-path")
        /// A malformed request (bad checksum format, …).
        public static let invalidRequest = Code("invalid-request")
        /// `userInfo` is larger than the library allows.
        public static let userInfoTooLarge = Code("user-info-too-large")
        /// The downloaded bytes do not have the expected SHA-256; nothing was kept.
        public static let checksumMismatch = Code("checksum-mismatch")
        /// The transport failed; see ``LibraryError/transportCode``.
        public static let transport = Code("transport")
        /// The library's database or folder could not be read or written.
        public static let storage = Code("storage")
        /// The download was cancelled.
        public static let cancelled = Code("cancelled")
        /// The library's file system has no room: writing would take its free space below the
        /// library's floor (``Library/Configuration/minFreeSpace``), or the file system or a
        /// quota refused a write (`ENOSPC`, `EDQUOT`). Not retried: space must be freed first.
        public static let insufficientStorage = Code("insufficient-storage")
    }

    /// What went wrong.
    public var code: Code
    /// A message a person can act on (names the issue, asset, URL or file; never a secret).
    public var message: String
    /// Whether trying again may help.
    public var isRetryable: Bool
    /// The case apps branch on (see ``Reason``), decided when the error was made.
    public var reason: Reason
    /// The transport's own code when a transport failed (`not-found`, `authentication-failed`,
    /// `content-encoding-not-identity`, `insufficient-storage`…), else `nil`.
    public var transportCode: TransportError.Code?
    /// The underlying error, if any: for diagnostics in the process where the failure happened.
    /// It does not survive a relaunch or the daemon's wire; nothing else of the error depends on it.
    public var underlying: (any Error & Sendable)?

    /// Creates an error; its ``reason`` and ``transportCode`` come from `code` and `underlying`
    /// (a ``TransportError``, or a `POSIXError` `ENOSPC`/`EDQUOT`), once.
    public init(_ code: Code, _ message: String, isRetryable: Bool = false, underlying: (any Error & Sendable)? = nil) {
        let transportCode = (underlying as? TransportError)?.code
        self.init(code, message, isRetryable: isRetryable,
                  reason: Reason(code: code, transportCode: transportCode, posixCode: (underlying as? POSIXError)?.code),
                  transportCode: transportCode, underlying: underlying)
    }

    /// Creates an error with its ``reason`` and ``transportCode`` as they were decided before
    /// (read back from a library's database, or from a daemon).
    public init(_ code: Code, _ message: String, isRetryable: Bool, reason: Reason, transportCode: TransportError.Code?,
                underlying: (any Error & Sendable)? = nil) {
        self.code = code
        self.message = message
        self.isRetryable = isRetryable
        self.reason = reason
        self.transportCode = transportCode
        self.underlying = underlying
    }

    /// Wraps a transport error.
    public init(_ error: TransportError) {
        self.init(.transport, error.description, isRetryable: error.isRetryable, underlying: error)
    }

    /// The transport error behind this error, when a transport failed: the transport's own
    /// error in the process where it happened; elsewhere (after a relaunch, through a daemon)
    /// one made of ``transportCode``, ``message`` and ``isRetryable``, without URL or Retry-After.
    public var transportError: TransportError? {
        if let error = underlying as? TransportError { return error }
        return transportCode.map { TransportError($0, message, isRetryable: isRetryable) }
    }

    /// What the delegates of a download of asset `id` get when it is cancelled.
    package static func cancelled(asset id: String) -> LibraryError {
        LibraryError(.cancelled, "download of asset \(id) was cancelled")
    }

    /// The same failure with another message (the reason and codes stay).
    package func withMessage(_ message: String) -> LibraryError {
        var error = self
        error.message = message
        return error
    }

    public var description: String { message }

    public static func == (lhs: LibraryError, rhs: LibraryError) -> Bool {
        lhs.code == rhs.code && lhs.reason == rhs.reason && lhs.transportCode == rhs.transportCode
            && lhs.message == rhs.message && lhs.isRetryable == rhs.isRetryable
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(code)
        hasher.combine(reason)
        hasher.combine(transportCode)
        hasher.combine(message)
        hasher.combine(isRetryable)
    }

    /// Underlying errors compared: transport errors with `==`, others by their description.
    static func sameUnderlying(_ lhs: (any Error & Sendable)?, _ rhs: (any Error & Sendable)?) -> Bool {
        switch (lhs, rhs) {
        case (nil, nil): true
        case let (left as TransportError, right as TransportError): left == right
        case let (left?, right?): !(left is TransportError) && !(right is TransportError)
            && String(describing: left) == String(describing: right)
        default: false
        }
    }

    static func storage(_ message: String, _ error: any Error) -> LibraryError {
        LibraryError(.storage, "\(message): \(error)", underlying: (error as? POSIXError).map { $0 as any Error & Sendable } ?? SendableError(error))
    }
}

/// Carries a non-Sendable error's description across concurrency domains.
struct SendableError: Error, Sendable, CustomStringConvertible {
    let description: String
    init(_ error: any Error) { description = String(describing: error) }
}
