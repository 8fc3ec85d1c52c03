import Foundation
import Paperboy

/// A download that fails one way, scripted on an ``InMemoryTransport``, with the failure it must
/// end in: what tests compare in process, after a relaunch and through a daemon.
public struct ScriptedFailure: Sendable, CustomStringConvertible {
    /// A short name (also the source's file name).
    public let name: String
    public let code: LibraryError.Code
    public let reason: LibraryError.Reason
    public let transportCode: TransportError.Code?
    public let isRetryable: Bool
    private let source: @Sendable (InMemoryTransport, String) -> AssetRequest

    /// The request that fails so, its source (if any) served by `transport`; `destinationPath`
    /// is the name.
    public func request(on transport: InMemoryTransport) -> AssetRequest { source(transport, name) }

    /// Whether `error` is this failure: code, reason, transport code and retryable.
    public func matches(_ error: LibraryError) -> Bool {
        error.code == code && error.reason == reason && error.transportCode == transportCode && error.isRetryable == isRetryable
    }

    public var description: String { name }

    /// A transport that fails every attempt with `code` (a library that retries it gives up
    /// after at most 16 attempts).
    private static func failing(_ name: String, _ code: TransportError.Code, _ reason: LibraryError.Reason,
                                _ message: String, libraryCode: LibraryError.Code = .transport) -> ScriptedFailure {
        ScriptedFailure(name: name, code: libraryCode, reason: reason, transportCode: code, isRetryable: code.isRetryableByDefault) { transport, name in
            let error = TransportError(code, message, url: URL(string: "mem://example/\(name)"))
            let url = transport.serve(Data("never served".utf8), at: name, script: Array(repeating: .fail(error), count: 16))
            return AssetRequest(url: url, destinationPath: name)
        }
    }

    /// HTTP 404, 401, 403, a checksum mismatch, a full disk, a refused connection.
    public static let all: [ScriptedFailure] = [
        ScriptedFailure(name: "missing.bin", code: .transport, reason: .notFound, transportCode: .notFound, isRetryable: false) { _, name in
            // Nothing served there: the in-memory transport's 404.
            AssetRequest(url: URL(string: "mem://example/\(name)")!, destinationPath: name)
        },
        failing("locked.bin", .authenticationFailed, .authentication, "HTTP 401 Unauthorized"),
        failing("forbidden.bin", .accessDenied, .accessDenied, "HTTP 403 Forbidden"),
        ScriptedFailure(name: "corrupt.bin", code: .checksumMismatch, reason: .checksumMismatch, transportCode: nil, isRetryable: false) { transport, name in
            let url = transport.serve(Data("not what the publisher hashed".utf8), at: name)
            return AssetRequest(url: url, sha256: String(repeating: "0", count: 64), destinationPath: name)
        },
        // The library's code for a full disk, whichever layer found it; the transport's kept.
        failing("full.bin", .insufficientStorage, .noSpace, "No space left on device", libraryCode: .insufficientStorage),
        failing("unreachable.bin", .connectionFailed, .network, "connection refused"),
    ]
}
