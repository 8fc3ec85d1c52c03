import CPaperboySSH2
import Foundation
import Paperboy

/// A libssh2 error code (and SFTP status, when there is one) with libssh2's own explanation,
/// kept as a transport error's underlying error.
public struct SSH2Error: Error, Sendable, CustomStringConvertible {
    /// The `LIBSSH2_ERROR_*` code.
    public var code: Int32
    /// The `LIBSSH2_FX_*` status, for `LIBSSH2_ERROR_SFTP_PROTOCOL`.
    public var sftpStatus: UInt?
    /// libssh2's message.
    public var message: String
    public var description: String {
        if let sftpStatus { return "libssh2 error \(code), SFTP status \(sftpStatus): \(message)" }
        return "libssh2 error \(code): \(message)"
    }
}

extension TransportError {
    /// The error for a failed libssh2 call on `session`, described as `action` ("reading /a/b").
    ///
    /// Connection-level codes mean the session is unusable: the caller marks it dead.
    static func ssh2(_ code: Int32, session: OpaquePointer?, sftp: OpaquePointer? = nil, action: String, url: URL) -> TransportError {
        var text: UnsafeMutablePointer<CChar>?
        var length: Int32 = 0
        if let session { _ = libssh2_session_last_error(session, &text, &length, 0) }
        let detail = text.map { String(cString: $0) } ?? "error \(code)"
        let place = url.redactedString
        if code == LIBSSH2_ERROR_SFTP_PROTOCOL, let sftp {
            let status = libssh2_sftp_last_error(sftp)
            return sftpStatus(status, action: action, url: url, detail: detail)
        }
        var error: TransportError
        switch code {
        case LIBSSH2_ERROR_SOCKET_SEND, LIBSSH2_ERROR_SOCKET_RECV, LIBSSH2_ERROR_SOCKET_DISCONNECT,
             LIBSSH2_ERROR_SOCKET_NONE, LIBSSH2_ERROR_BAD_SOCKET, LIBSSH2_ERROR_CHANNEL_CLOSED,
             LIBSSH2_ERROR_CHANNEL_EOF_SENT, LIBSSH2_ERROR_CHANNEL_FAILURE, LIBSSH2_ERROR_BANNER_RECV,
             LIBSSH2_ERROR_BANNER_SEND:
            error = TransportError(.connectionLost, "SSH connection lost while \(action) (\(place)): \(detail)", url: url)
        case LIBSSH2_ERROR_TIMEOUT, LIBSSH2_ERROR_SOCKET_TIMEOUT:
            error = TransportError(.timedOut, "SSH server timed out while \(action) (\(place)): \(detail)", url: url)
        case LIBSSH2_ERROR_KEX_FAILURE, LIBSSH2_ERROR_KEY_EXCHANGE_FAILURE, LIBSSH2_ERROR_METHOD_NONE:
            error = TransportError(
                .protocolError,
                "no common SSH algorithms with \(place) while \(action) (libssh2 \(SFTPTransport.libssh2Version) offers aes-ctr, hmac-sha2 and ed25519/ECDSA/RSA host keys): \(detail)",
                url: url, isRetryable: false)
        case LIBSSH2_ERROR_AUTHENTICATION_FAILED, LIBSSH2_ERROR_PUBLICKEY_UNVERIFIED, LIBSSH2_ERROR_PASSWORD_EXPIRED:
            error = TransportError(.authenticationFailed, "\(place) refused authentication while \(action): \(detail)", url: url, isRetryable: false)
        case LIBSSH2_ERROR_ALLOC:
            error = TransportError(.ioError, "out of memory while \(action) (\(place))", url: url)
        default:
            error = TransportError(.protocolError, "SSH error while \(action) (\(place)): \(detail)", url: url, isRetryable: true)
        }
        error.underlying = SSH2Error(code: code, sftpStatus: nil, message: detail)
        return error
    }

    /// The error for an SFTP status answered by the server.
    static func sftpStatus(_ status: UInt, action: String, url: URL, detail: String = "") -> TransportError {
        let place = url.redactedString
        var error: TransportError
        switch status {
        case UInt(LIBSSH2_FX_NO_SUCH_FILE), UInt(LIBSSH2_FX_NO_SUCH_PATH):
            error = TransportError(.notFound, "no such file: \(place)", url: url, isRetryable: false)
        case UInt(LIBSSH2_FX_PERMISSION_DENIED), UInt(LIBSSH2_FX_WRITE_PROTECT):
            error = TransportError(.accessDenied, "permission denied: \(place)", url: url, isRetryable: false)
        case UInt(LIBSSH2_FX_NO_CONNECTION), UInt(LIBSSH2_FX_CONNECTION_LOST):
            error = TransportError(.connectionLost, "SFTP connection lost while \(action) (\(place))", url: url)
        case UInt(LIBSSH2_FX_NOT_A_DIRECTORY), UInt(LIBSSH2_FX_INVALID_FILENAME):
            error = TransportError(.notFound, "no such file (a path component is not a folder): \(place)", url: url, isRetryable: false)
        case UInt(LIBSSH2_FX_OP_UNSUPPORTED):
            error = TransportError(.protocolError, "the SFTP server does not support \(action) (\(place))", url: url, isRetryable: false)
        default:
            // SSH_FX_FAILURE and friends: a server-side problem that may pass.
            error = TransportError(.serverError, "SFTP server failed while \(action) (\(place)), status \(status)", url: url, isRetryable: true)
        }
        error.underlying = SSH2Error(code: LIBSSH2_ERROR_SFTP_PROTOCOL, sftpStatus: status, message: detail)
        return error
    }

    /// Whether `code` means the connection itself is gone (the session must not be reused).
    static func ssh2BreaksSession(_ code: Int32) -> Bool {
        code != LIBSSH2_ERROR_SFTP_PROTOCOL && code != LIBSSH2_ERROR_EAGAIN
            && code != LIBSSH2_ERROR_AUTHENTICATION_FAILED && code != LIBSSH2_ERROR_PUBLICKEY_UNVERIFIED
            && code != LIBSSH2_ERROR_FILE && code != LIBSSH2_ERROR_PASSWORD_EXPIRED
    }
}
