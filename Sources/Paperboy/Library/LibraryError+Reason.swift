import Foundation

extension LibraryError {
    /// The cases apps branch on, flattened from ``LibraryError/code`` and
    /// ``LibraryError/transportError``: `error.reason == .notFound` instead of
    /// `error.code == .transport && error.transportError?.code == .notFound`.
    ///
    /// New reasons may be added: compare, don't switch exhaustively. An error that is none of
    /// these has the reason ``other``.
    public struct Reason: Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(_ rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// The source has no such file: HTTP 404 or 410, SFTP "no such file", a missing local
        /// file (``TransportError/Code/notFound``). Not an asset or issue unknown to the library:
        /// those keep their codes, ``LibraryError/Code/assetNotFound`` and ``LibraryError/Code/issueNotFound``.
        public static let notFound = Reason("not-found")
        /// Credentials were refused or none were available: HTTP 401 or 407, SSH authentication
        /// refused (``TransportError/Code/authenticationFailed``).
        public static let authentication = Reason("authentication")
        /// The source refuses access whoever asks: HTTP 403, `EACCES`, SFTP permission denied
        /// (``TransportError/Code/accessDenied``).
        public static let accessDenied = Reason("access-denied")
        /// The downloaded bytes do not have the expected SHA-256 (``LibraryError/Code/checksumMismatch``).
        public static let checksumMismatch = Reason("checksum-mismatch")
        /// The library's file system has no room: writing would take its free space below the
        /// library's floor, or a write failed with `ENOSPC` or `EDQUOT`
        /// (``LibraryError/Code/insufficientStorage``, ``TransportError/Code/insufficientStorage``,
        /// or a ``LibraryError/Code/storage`` error whose underlying error is a `POSIXError` with
        /// one of those codes).
        public static let noSpace = Reason("no-space")
        /// The app cancelled the download (``LibraryError/Code/cancelled``).
        public static let cancelled = Reason("cancelled")
        /// The source could not be reached or the connection failed: connection refused, DNS,
        /// timeouts, a dropped connection (retryable; reported once retries are used up).
        public static let network = Reason("network")
        /// Anything else: see ``LibraryError/code`` and ``LibraryError/message``.
        public static let other = Reason("other")
    }

    /// The case an app usually branches on (see ``Reason``).
    public var reason: Reason {
        switch code {
        case .cancelled: return .cancelled
        case .checksumMismatch: return .checksumMismatch
        case .insufficientStorage: return .noSpace
        case .storage:
            if let posix = underlying as? POSIXError, posix.code == .ENOSPC || posix.code == .EDQUOT { return .noSpace }
            return .other
        default:
            break
        }
        guard let transport = transportError else { return .other }
        switch transport.code {
        case .notFound: return .notFound
        case .authenticationFailed: return .authentication
        case .accessDenied: return .accessDenied
        case .insufficientStorage: return .noSpace
        case .cancelled: return .cancelled
        case .connectionFailed, .connectionLost, .timedOut: return .network
        default: return .other
        }
    }

    /// Whether the source has no such file (``Reason/notFound``).
    public var isNotFound: Bool { reason == .notFound }
    /// Whether credentials were refused or missing (``Reason/authentication``).
    public var isAuthenticationFailure: Bool { reason == .authentication }
    /// Whether the file did not match its SHA-256 (``Reason/checksumMismatch``).
    public var isChecksumMismatch: Bool { reason == .checksumMismatch }
    /// Whether the library's file system has no room (``Reason/noSpace``).
    public var isNoSpace: Bool { reason == .noSpace }
    /// Whether the app cancelled the download (``Reason/cancelled``).
    public var isCancelled: Bool { reason == .cancelled }
}
