import Foundation
import Paperboy
import PaperboyDaemon

extension LibraryError {
    /// The library error an `ERROR` object describes, with the same ``reason`` as in the daemon
    /// (a transport failure carries a ``TransportError`` of the matching code, so that
    /// `isAuthenticationFailure`, `isNotFound`… answer as they would in process).
    init(wire: WireError) {
        let code = LibraryError.Code(wire.code)
        let retryable = wire.retryable ?? false
        let transportCode: TransportError.Code? = switch wire.reason.map(LibraryError.Reason.init) {
        case .notFound?: .notFound
        case .authentication?: .authenticationFailed
        case .accessDenied?: .accessDenied
        case .network?: .connectionFailed
        case .noSpace? where code == .transport: .insufficientStorage
        case .cancelled? where code == .transport: .cancelled
        default: nil
        }
        if code == .storage, wire.reason == LibraryError.Reason.noSpace.rawValue {
            self.init(code, wire.message, isRetryable: retryable, underlying: POSIXError(.ENOSPC))
        } else if code == .transport, let transportCode {
            self.init(code, wire.message, isRetryable: retryable,
                      underlying: TransportError(transportCode, wire.message, isRetryable: retryable))
        } else {
            self.init(code, wire.message, isRetryable: retryable)
        }
    }
}
