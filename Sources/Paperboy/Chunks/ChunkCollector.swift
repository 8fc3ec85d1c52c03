/// Holds the verified bytes of one chunk fetched alone to repair a partial file (no more than
/// the chunk: ``ChunkRangeSink`` refuses the rest), within the bandwidth limits of the file's
/// sink, whose credentials and delegates answer challenges.
final class ChunkCollector: TransferSink, @unchecked Sendable {
    let sink: PartialFileSink
    private(set) var bytes: [UInt8] = []

    init(for sink: PartialFileSink) { self.sink = sink }

    func begin(_ response: TransferResponse) throws {}

    func write(_ bytes: UnsafeRawBufferPointer) async throws {
        try await sink.bandwidth.acquire(bytes.count)
        self.bytes.append(contentsOf: bytes)
    }

    func tryWrite(_ bytes: UnsafeRawBufferPointer) throws -> Bool {
        guard sink.bandwidth.tryTake(bytes.count) else { return false }
        self.bytes.append(contentsOf: bytes)
        return true
    }

    func whenWritable(_ callback: @escaping @Sendable () -> Void) { sink.bandwidth.whenGranted(callback) }
    func challenge(_ challenge: AuthChallenge) async -> AuthChallengeDisposition { await sink.challenge(challenge) }
}
