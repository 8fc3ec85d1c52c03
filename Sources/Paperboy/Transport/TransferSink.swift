import Foundation

/// Where a ``Transport`` pushes the bytes of one transfer. The core owns it.
///
/// The core's sink writes to the partial file, counts bytes, applies the bandwidth limiter,
/// hashes, checkpoints progress durably and emits coalesced progress. Test sinks
/// (`PaperboyTesting`) record what a transport did instead.
///
/// Rules, in order: ``begin(_:)`` exactly once before any data; then ``write(_:)`` (or
/// ``tryWrite(_:)``) with consecutive chunks; ``challenge(_:)`` at any time. Methods are safe to
/// call from any thread, but calls for one transfer must not overlap.
public protocol TransferSink: AnyObject, Sendable {
    /// Records what the source promised.
    ///
    /// - Throws: ``TransferRestart`` when the core wants the transfer redone from offset 0
    ///   (the honoured offset or validator does not match the bytes on disk); transports rethrow it.
    func begin(_ response: TransferResponse) throws

    /// Accepts one chunk, suspending while the core pushes back (bandwidth limit, slow disk).
    ///
    /// The buffer is only read during the call. A suspended `write` means: pause the source.
    func write(_ bytes: UnsafeRawBufferPointer) async throws

    /// Accepts one chunk without suspending, for transports that run C callbacks on their own
    /// thread (libcurl, libssh2).
    ///
    /// - Returns: `true` if the whole chunk was taken; `false` if nothing was taken because the
    ///   core pushes back: pause the source and offer the same bytes again once the callback
    ///   given to ``whenWritable(_:)`` runs.
    func tryWrite(_ bytes: UnsafeRawBufferPointer) throws -> Bool

    /// Calls `callback` once, from any thread, as soon as ``tryWrite(_:)`` may accept bytes again.
    func whenWritable(_ callback: @escaping @Sendable () -> Void)

    /// Asks for credentials or a trust decision, answered from configuration or the app's delegate.
    func challenge(_ challenge: AuthChallenge) async -> AuthChallengeDisposition
}

extension TransferSink {
    /// Accepts one chunk held in `Data` (convenience over ``write(_:)``).
    public func write(_ data: Data) async throws {
        // Data only lends its bytes to a synchronous closure: copy them once for the async call.
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: data.count, alignment: 16)
        defer { buffer.deallocate() }
        _ = data.copyBytes(to: buffer.bindMemory(to: UInt8.self))
        try await write(UnsafeRawBufferPointer(buffer))
    }
}

/// Thrown by ``TransferSink/begin(_:)`` when the bytes on disk cannot be continued.
///
/// Transports rethrow it unchanged; the core truncates the partial file and runs the job again
/// from offset 0 without counting a failed attempt.
public struct TransferRestart: Error, Sendable, CustomStringConvertible {
    /// Why the core restarts (for logs).
    public var reason: String
    /// Creates the error.
    public init(reason: String) { self.reason = reason }
    public var description: String { "restarting from zero: \(reason)" }
}
