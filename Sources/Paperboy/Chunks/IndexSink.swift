import Foundation

/// Collects an index in memory, refusing more than `limit` bytes before holding them, within
/// the asset's bandwidth limits.
final class IndexSink: TransferSink, @unchecked Sendable {
    let url: URL
    /// What the index is, in messages: `chunk index`, `zsync control file`.
    let what: String
    let limit: Int
    let bandwidth: TransferBandwidth
    let answer: @Sendable (AuthChallenge) async -> AuthChallengeDisposition
    private(set) var data = Data()

    init(url: URL, what: String, limit: Int, bandwidth: TransferBandwidth,
         answer: @escaping @Sendable (AuthChallenge) async -> AuthChallengeDisposition) {
        self.url = url
        self.what = what
        self.limit = limit
        self.bandwidth = bandwidth
        self.answer = answer
    }

    private func tooLarge(_ count: Int64) -> TransportError {
        TransportError(.protocolError, "\(what) \(url.redactedString): \(count) bytes or more, above the \(limit) an index may have here",
                       url: url, isRetryable: false)
    }

    func begin(_ response: TransferResponse) throws {
        if let length = response.expectedLength, length > Int64(limit) { throw tooLarge(length) }
        data = Data()
    }

    func write(_ bytes: UnsafeRawBufferPointer) async throws {
        try checkRoom(for: bytes.count)
        try await bandwidth.acquire(bytes.count)
        data.append(contentsOf: bytes)
    }

    func tryWrite(_ bytes: UnsafeRawBufferPointer) throws -> Bool {
        try checkRoom(for: bytes.count)
        guard bandwidth.tryTake(bytes.count) else { return false }
        data.append(contentsOf: bytes)
        return true
    }

    private func checkRoom(for count: Int) throws {
        guard data.count + count <= limit else { throw tooLarge(Int64(data.count + count)) }
    }

    func whenWritable(_ callback: @escaping @Sendable () -> Void) { bandwidth.whenGranted(callback) }

    func challenge(_ challenge: AuthChallenge) async -> AuthChallengeDisposition { await answer(challenge) }
}
