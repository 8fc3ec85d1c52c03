import Foundation

/// Why a library operation or a download failed.
///
/// Two errors are equal (`==`) when their ``code``, ``message`` and ``isRetryable`` are, and their
/// underlying errors too: a ``TransportError`` compares with its own `==`, any other underlying
/// error by its description.
public struct LibraryError: Error, Sendable, Equatable, CustomStringConvertible {
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
        /// The transport failed; see ``LibraryError/transportError``.
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
    /// The underlying error, if any.
    public var underlying: (any Error & Sendable)?

    /// Creates an error.
    public init(_ code: Code, _ message: String, isRetryable: Bool = false, underlying: (any Error & Sendable)? = nil) {
        self.code = code
        self.message = message
        self.isRetryable = isRetryable
        self.underlying = underlying
    }

    /// Wraps a transport error.
    public init(_ error: TransportError) {
        self.init(.transport, error.description, isRetryable: error.isRetryable, underlying: error)
    }

    /// The transport error behind this error, if any.
    public var transportError: TransportError? { underlying as? TransportError }

    public var description: String { message }

    public static func == (lhs: LibraryError, rhs: LibraryError) -> Bool {
        lhs.code == rhs.code && lhs.message == rhs.message && lhs.isRetryable == rhs.isRetryable
            && sameUnderlying(lhs.underlying, rhs.underlying)
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
        LibraryError(.storage, "\(message): \(error)", underlying: SendableError(error))
    }
}

/// Carries a non-Sendable error's description across concurrency domains.
struct SendableError: Error, Sendable, CustomStringConvertible {
    let description: String
    init(_ error: any Error) { description = String(describing: error) }
}
