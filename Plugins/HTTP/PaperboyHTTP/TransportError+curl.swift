import CPaperboyCurl
import Foundation
import Paperboy

extension TransportError {
    /// The error for a libcurl result, with the URL (never its credentials) and curl's own words.
    static func curl(_ code: CURLcode, detail: String, url: URL, received: Int64 = 0, expected: Int64? = nil) -> TransportError {
        let place = url.redactedString
        let reason = detail.isEmpty ? String(cString: curl_easy_strerror(code)) : detail
        func error(_ kind: Code, _ message: String, retryable: Bool? = nil) -> TransportError {
            var error = TransportError(kind, message, url: url, isRetryable: retryable)
            error.underlying = CurlError(code: Int(code.rawValue), message: reason)
            return error
        }
        switch code {
        case CURLE_UNSUPPORTED_PROTOCOL:
            return error(.badURL, "\(place) (or a redirect from it) uses a scheme other than http or https: \(reason)", retryable: false)
        case CURLE_URL_MALFORMAT:
            return error(.badURL, "malformed URL \(place): \(reason)", retryable: false)
        case CURLE_COULDNT_RESOLVE_PROXY, CURLE_COULDNT_RESOLVE_HOST:
            return error(.connectionFailed, "cannot resolve the host of \(place): \(reason)")
        case CURLE_COULDNT_CONNECT:
            return error(.connectionFailed, "cannot connect to \(place): \(reason)")
        case CURLE_OPERATION_TIMEDOUT:
            return error(.timedOut, "\(place) stalled or did not answer in time: \(reason)")
        case CURLE_PARTIAL_FILE:
            let total = expected.map { " of \($0)" } ?? ""
            return error(.connectionLost, "the body of \(place) ended early, after \(received)\(total) bytes: \(reason)")
        case CURLE_RECV_ERROR, CURLE_SEND_ERROR, CURLE_GOT_NOTHING, CURLE_HTTP2, CURLE_HTTP2_STREAM:
            return error(.connectionLost, "connection to \(place) lost after \(received) bytes: \(reason)")
        case CURLE_PEER_FAILED_VERIFICATION:
            return error(.untrustedServer, "the TLS certificate of \(place) does not verify: \(reason)", retryable: false)
        case CURLE_SSL_CACERT_BADFILE, CURLE_SSL_CRL_BADFILE, CURLE_SSL_ISSUER_ERROR, CURLE_SSL_PINNEDPUBKEYNOTMATCH:
            return error(.untrustedServer, "cannot verify the TLS identity of \(place): \(reason)", retryable: false)
        case CURLE_SSL_CONNECT_ERROR:
            return error(.connectionFailed, "TLS handshake with \(place) failed: \(reason)")
        case CURLE_TOO_MANY_REDIRECTS:
            return error(.tooManyRedirects, "too many redirects from \(place): \(reason)", retryable: false)
        case CURLE_LOGIN_DENIED:
            return error(.authenticationFailed, "\(place) refused the credentials: \(reason)", retryable: false)
        case CURLE_RANGE_ERROR, CURLE_BAD_CONTENT_ENCODING, CURLE_WEIRD_SERVER_REPLY:
            return error(.protocolError, "\(place) answered something unusable: \(reason)")
        case CURLE_ABORTED_BY_CALLBACK:
            return error(.cancelled, "transfer of \(place) was cancelled", retryable: false)
        case CURLE_OUT_OF_MEMORY, CURLE_WRITE_ERROR:
            return error(.ioError, "transfer of \(place) failed locally: \(reason)")
        default:
            return error(.protocolError, "transfer of \(place) failed (curl error \(code.rawValue)): \(reason)", retryable: true)
        }
    }

    /// The error for a final HTTP status that is not a success.
    static func http(_ head: ResponseHead, url: URL, now: Date = Date()) -> TransportError {
        let status = head.status
        let phrase = reasonPhrase(status)
        let text = "HTTP \(status)\(phrase.isEmpty ? "" : " " + phrase) from \(url.redactedString)"
        let retryAfter = head.value("retry-after").flatMap { parseRetryAfter($0, now: now) }
        switch status {
        case 404, 410:
            return TransportError(.notFound, text, url: url, isRetryable: false)
        case 403:
            return TransportError(.accessDenied, text, url: url, isRetryable: false)
        case 401, 407:
            return TransportError(.authenticationFailed, text, url: url, isRetryable: false)
        case 408:
            return TransportError(.timedOut, text, url: url, retryAfter: retryAfter)
        case 429:
            return TransportError(.rateLimited, text, url: url, isRetryable: true, retryAfter: retryAfter)
        case 503 where retryAfter != nil:
            return TransportError(.rateLimited, text, url: url, isRetryable: true, retryAfter: retryAfter)
        case 500..<600:
            return TransportError(.serverError, text, url: url, isRetryable: true, retryAfter: retryAfter)
        case 300..<400:
            return TransportError(.protocolError, "\(text) without a usable Location", url: url, isRetryable: false)
        default:
            return TransportError(.protocolError, text, url: url, isRetryable: false)
        }
    }

    /// `Retry-After` as delay seconds or an HTTP-date (RFC 9110 §10.2.3), made safe by
    /// ``RequestedDelay`` (at most a day; a date in the past is no delay).
    static func parseRetryAfter(_ value: String, now: Date = Date()) -> Duration? {
        let text = value.trimmingCharacters(in: .whitespaces)
        if let delay = RequestedDelay.digits(text) { return delay }
        // An HTTP-date is a few dozen characters of printable ASCII (RFC 9110 §5.6.7). Anything
        // else never reaches DateFormatter, which traps on some non-ASCII text ("Incorrect
        // range", found by scripts/fuzz headers): a server's header must not end the process.
        guard text.utf8.count <= 64, text.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) else { return nil }
        for format in ["EEE, dd MMM yyyy HH:mm:ss zzz", "EEEE, dd-MMM-yy HH:mm:ss zzz", "EEE MMM d HH:mm:ss yyyy"] {
            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.timeZone = TimeZone(identifier: "GMT")
            formatter.dateFormat = format
            if let date = formatter.date(from: text) {
                return RequestedDelay.until(date, from: now)
            }
        }
        return nil
    }

    private static func reasonPhrase(_ status: Int) -> String {
        switch status {
        case 400: "Bad Request"
        case 401: "Unauthorized"
        case 403: "Forbidden"
        case 404: "Not Found"
        case 407: "Proxy Authentication Required"
        case 408: "Request Timeout"
        case 410: "Gone"
        case 416: "Range Not Satisfiable"
        case 429: "Too Many Requests"
        case 500: "Internal Server Error"
        case 502: "Bad Gateway"
        case 503: "Service Unavailable"
        case 504: "Gateway Timeout"
        default: ""
        }
    }
}

/// A libcurl result code and its explanation, kept as a transport error's underlying error.
public struct CurlError: Error, Sendable, CustomStringConvertible {
    /// The `CURLcode`.
    public var code: Int
    /// libcurl's message.
    public var message: String
    public var description: String { "curl error \(code): \(message)" }
}
