import Foundation

extension LibraryError {
    /// The cases apps branch on, flattened from ``LibraryError/code`` and
    /// ``LibraryError/transportCode``: `error.reason == .notFound` instead of
    /// `error.code == .transport && error.transportCode == .notFound`.
    ///
    /// Decided once, where the error is made (``init(code:transportCode:posixCode:)``), and
    /// stored with it: a failure read back from the library's database or received from a daemon
    /// has the reason it had in the process where it happened.
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

        /// The reason of a failure with these codes: the one rule, applied where an error is made
        /// (and to failures a library recorded before reasons were stored).
        ///
        /// - Parameters:
        ///   - code: the library's code.
        ///   - transportCode: the transport's code, when a transport failed.
        ///   - posixCode: the `errno` of a failed write, if known (`ENOSPC`, `EDQUOT`: no space).
        public init(code: LibraryError.Code, transportCode: TransportError.Code?, posixCode: POSIXErrorCode? = nil) {
            switch code {
            case .cancelled: self = .cancelled
            case .checksumMismatch: self = .checksumMismatch
            case .insufficientStorage: self = .noSpace
            case .storage where posixCode == .ENOSPC || posixCode == .EDQUOT: self = .noSpace
            case .storage: self = .other
            default:
                switch transportCode {
                case .notFound?: self = .notFound
                case .authenticationFailed?: self = .authentication
                case .accessDenied?: self = .accessDenied
                case .insufficientStorage?: self = .noSpace
                case .cancelled?: self = .cancelled
                case .connectionFailed?, .connectionLost?, .timedOut?: self = .network
                default: self = .other
                }
            }
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
