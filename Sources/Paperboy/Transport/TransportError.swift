import Foundation

/// Why a transfer failed, and whether another attempt can help.
///
/// Two errors are equal (`==`) when their code, message, URL, ``isRetryable`` and
/// ``retryAfter`` are, and their underlying errors have the same description.
public struct TransportError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A stable error code. New codes may be added: compare, don't switch exhaustively.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(_ rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// The URL is malformed or unusable.
        public static let badURL = Code("bad-url")
        /// No transport is registered for the URL's scheme.
        public static let unsupportedScheme = Code("unsupported-scheme")
        /// The resource does not exist (404, 410, ENOENT, SFTP no such file).
        public static let notFound = Code("not-found")
        /// The source refuses access (403, EACCES, SFTP permission denied).
        public static let accessDenied = Code("access-denied")
        /// Credentials were refused or none were available.
        public static let authenticationFailed = Code("authentication-failed")
        /// The server's identity could not be verified (TLS, unknown SSH host key).
        public static let untrustedServer = Code("untrusted-server")
        /// The SSH host key differs from the recorded one.
        public static let hostKeyMismatch = Code("host-key-mismatch")
        /// Could not connect (refused, DNS failure, unreachable).
        public static let connectionFailed = Code("connection-failed")
        /// The connection dropped mid-transfer or the body was shorter than announced.
        public static let connectionLost = Code("connection-lost")
        /// No byte arrived within the idle timeout, or the connect timeout passed.
        public static let timedOut = Code("timed-out")
        /// The server failed (5xx).
        public static let serverError = Code("server-error")
        /// The server asked to slow down (429, 503 with Retry-After).
        public static let rateLimited = Code("rate-limited")
        /// The source answered something the transport cannot use.
        public static let protocolError = Code("protocol-error")
        /// The source changed while it was being read.
        public static let sourceChanged = Code("source-changed")
        /// A local read or write failed.
        public static let ioError = Code("io-error")
        /// The library's file system has no room for the file: less free space than the source
        /// announced, or a write failed with `ENOSPC` or `EDQUOT`. Not retryable.
        public static let insufficientStorage = Code("insufficient-storage")
        /// The transfer was cancelled.
        public static let cancelled = Code("cancelled")
        /// Too many redirects.
        public static let tooManyRedirects = Code("too-many-redirects")
        /// A redirect would downgrade the transfer, such as from `https` to plain `http`. Not retryable.
        public static let insecureRedirect = Code("insecure-redirect")
        /// The source sent the body encoded (`Content-Encoding: gzip`, say) although the transfer
        /// asked for the bytes as they are: an encoded body is not the file's bytes and cannot be
        /// resumed by range. Not retryable: the server's configuration must change.
        public static let contentEncodingNotIdentity = Code("content-encoding-not-identity")
    }

    /// What went wrong.
    public var code: Code
    /// Whether another attempt may succeed (resets, timeouts, 5xx, 429); `false` for 404, 403, refused auth.
    public var isRetryable: Bool
    /// A delay the source asked for before the next attempt (Retry-After).
    public var retryAfter: Duration?
    /// A message a person can act on. Never contains a secret.
    public var message: String
    /// The URL involved, without credentials.
    public var url: URL?
    /// The underlying error, if any.
    public var underlying: (any Error & Sendable)?

    /// Creates an error. `url` is stored without its user and password.
    public init(
        _ code: Code, _ message: String, url: URL? = nil, isRetryable: Bool? = nil,
        retryAfter: Duration? = nil, underlying: (any Error & Sendable)? = nil
    ) {
        self.code = code
        self.message = message
        self.url = url?.redacted
        self.isRetryable = isRetryable ?? code.isRetryableByDefault
        self.retryAfter = retryAfter
        self.underlying = underlying
    }

    /// The message, then the URL (unless the message names it already) and the code.
    public var description: String {
        if let url, case let shown = url.redactedString, !message.contains(shown) { return "\(message) (\(shown), \(code))" }
        return "\(message) (\(code))"
    }

    public static func == (lhs: TransportError, rhs: TransportError) -> Bool {
        lhs.code == rhs.code && lhs.message == rhs.message && lhs.url == rhs.url && lhs.isRetryable == rhs.isRetryable
            && lhs.retryAfter == rhs.retryAfter && LibraryError.sameUnderlying(lhs.underlying, rhs.underlying)
    }
}

extension TransportError {
    /// The longest delay a source may ask for with ``retryAfter`` (one day, ``RequestedDelay/max``);
    /// longer requests are clamped to it (the retry policy caps the wait again, at an hour).
    public static let maxRetryAfter: Duration = RequestedDelay.max

    /// A delay a server or helper asked for, in seconds, made safe to use: `nil` when it is not
    /// a number or negative, at most ``maxRetryAfter`` (infinity and `1e300` included). The same
    /// as ``RequestedDelay/seconds(_:)``.
    public static func retryAfter(seconds: Double) -> Duration? {
        RequestedDelay.seconds(seconds)
    }
}

extension TransportError.Code {
    /// Whether errors with this code are retryable unless the transport says otherwise.
    public var isRetryableByDefault: Bool {
        switch self {
        case .connectionFailed, .connectionLost, .timedOut, .serverError, .rateLimited, .sourceChanged, .ioError:
            return true
        default:
            return false
        }
    }
}

extension URL {
    /// This URL without user and password.
    public var redacted: URL {
        guard var components = URLComponents(url: self, resolvingAgainstBaseURL: false),
              components.user != nil || components.password != nil else { return self }
        components.user = nil
        components.password = nil
        return components.url ?? self
    }

    /// This URL as text, without user and password (and the path only, for file URLs).
    public var redactedString: String {
        isFileURL ? path : redacted.absoluteString
    }

    /// URL text that may not parse, for a message: whatever stands between `://` and an `@`
    /// (a user and password) replaced with `…`.
    public static func redactedText(_ text: String) -> String {
        guard let schemeEnd = text.range(of: "://"), let at = text[schemeEnd.upperBound...].firstIndex(of: "@") else { return text }
        var shown = text
        shown.replaceSubrange(schemeEnd.upperBound..<at, with: "…")
        return shown
    }
}
