#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Crypto
import Foundation
import Synchronization

/// Fills the partial file of an indexed asset from a ``ChunkPlan``: copies the chunks the
/// library holds, fetches the others as ranges (``TransferJob/rangeEnd``), and checks every
/// chunk's SHA-256 before it reaches the file.
///
/// It stands where a transport's `transfer` stands for an asset fetched whole, in front of the
/// same sink: `begin` once (the index's length, and the index's SHA-256 as the validator, so
/// that a resume continues only the same version), then whole verified chunks in order. The
/// partial file therefore always ends at a chunk boundary, the whole file's SHA-256 is checked
/// by the sink at the end as for any asset, and delivery is unchanged.
final class ChunkedTransfer: Sendable {
    /// What an index fetched for an asset may describe: 2^18 chunks (9 MiB of index; 8 GiB of
    /// file at the standard average chunk), of a file up to 1 TiB.
    static let indexLimits = ChunkIndex.Limits(maxFileSize: 1 << 40, maxChunks: 1 << 18)

    /// How often one chunk is fetched again after its bytes did not match, before the asset fails.
    static let refetches = 2

    let plan: ChunkPlan
    let indexURL: URL
    private let counts = Mutex<(reused: Int64, fetched: Int64)>((0, 0))

    init(plan: ChunkPlan, indexURL: URL) {
        self.plan = plan
        self.indexURL = indexURL
    }

    /// Bytes copied from files the library holds, and bytes fetched, so far.
    var bytes: (reused: Int64, fetched: Int64) { counts.withLock { $0 } }

    /// The validator an indexed asset's partial file is recorded with: the whole file's SHA-256
    /// its index gives.
    static func validator(of index: ChunkIndex) -> ResourceValidator {
        ResourceValidator("pbidx-sha256:\(index.sha256)", strength: .strong)
    }

    /// Fills `sink` from `job.offset` (a chunk boundary) to the end.
    ///
    /// - Throws: the sink's and the transport's errors; a ``TransportError`` naming the chunk,
    ///   its offset and the URL when a chunk still does not match after ``refetches`` fetches.
    func run(_ job: TransferJob, transport: any Transport, into sink: PartialFileSink) async throws {
        let index = plan.index
        try sink.begin(TransferResponse(offset: job.offset, expectedLength: index.fileSize, validator: Self.validator(of: index)))
        var steps = plan.steps(after: job.offset)
        let files = plan.seeds.map { open($0.path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC) }
        defer { for file in files where file >= 0 { close(file) } }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: index.parameters.maximum, alignment: 16)
        defer { buffer.deallocate() }
        var sourceValidator: ResourceValidator?
        var failures: [Int: Int] = [:]
        var position = 0
        while position < steps.count {
            try Task.checkCancellation()
            switch steps[position] {
            case .copy(let chunk, let seed, let offset):
                let length = index.chunks[chunk].length
                let bytes = UnsafeRawBufferPointer(rebasing: buffer[..<length])
                if files[seed] >= 0, case .success(length) = POSIX.readFully(files[seed], into: UnsafeMutableRawBufferPointer(rebasing: buffer[..<length]), at: offset),
                   SHA256Value(SHA256.hash(data: bytes)) == index.chunks[chunk].sha256 {
                    try await sink.writeCopied(bytes)
                    counts.withLock { $0.reused += Int64(length) }
                } else {
                    // The file changed since it was planned: fetched instead.
                    steps.insert(.fetch(chunks: chunk..<chunk + 1), at: position + 1)
                }
            case .fetch(let chunks):
                let rangeSink = ChunkRangeSink(outer: sink, index: index, chunks: chunks, url: job.url, indexURL: indexURL,
                                               expectedValidator: sourceValidator)
                var ranged = job
                ranged.offset = rangeSink.range.lowerBound
                ranged.rangeEnd = rangeSink.range.upperBound
                ranged.validator = sourceValidator
                ranged.connectionsPerAsset = 1
                do {
                    defer { counts.withLock { $0.fetched += rangeSink.verifiedBytes } }
                    try await transport.transfer(ranged, into: rangeSink)
                    try await rangeSink.drain()
                    sourceValidator = sourceValidator ?? rangeSink.validator
                    guard rangeSink.isComplete else {
                        throw TransportError(.connectionLost, "\(job.url.redactedString) ended the range \(rangeSink.shownRange) early", url: job.url)
                    }
                } catch let mismatch as ChunkMismatch {
                    try await rangeSink.drain()
                    sourceValidator = sourceValidator ?? rangeSink.validator
                    let failed = failures[mismatch.chunk, default: 0] + 1
                    failures[mismatch.chunk] = failed
                    let chunk = index.chunks[mismatch.chunk]
                    guard failed <= Self.refetches else {
                        throw TransportError(
                            .protocolError,
                            "chunk \(mismatch.chunk) (bytes \(chunk.offset)-\(chunk.offset + Int64(chunk.length) - 1)) of \(job.url.redactedString) "
                                + "did not match its SHA-256 in \(indexURL.redactedString) in \(failed) fetches",
                            url: job.url, isRetryable: false)
                    }
                    // Fetched again alone, then the rest of the range.
                    var again: [ChunkPlan.Step] = [.fetch(chunks: mismatch.chunk..<mismatch.chunk + 1)]
                    if mismatch.chunk + 1 < chunks.upperBound { again.append(.fetch(chunks: mismatch.chunk + 1..<chunks.upperBound)) }
                    steps.insert(contentsOf: again, at: position + 1)
                }
            }
            position += 1
        }
    }

    /// Fetches and reads the index at `url` through `transport`, no larger than `limits` allow.
    ///
    /// - Throws: ``TransportError`` naming the index URL: the transport's, or `.protocolError`
    ///   for an index that is too large or that the reader refuses (``ChunkIndexError``).
    static func fetchIndex(_ job: TransferJob, transport: any Transport, limits: ChunkIndex.Limits,
                           answer: @escaping @Sendable (AuthChallenge) async -> AuthChallengeDisposition) async throws -> ChunkIndex {
        let sink = IndexSink(url: job.url, limit: limits.maxIndexBytes, answer: answer)
        try await transport.transfer(job, into: sink)
        let source = job.url.redactedString
        do {
            // Binary, not JSON: the chunk index's own bounded reader.
            return try ChunkIndex.decode(sink.data,
                                         from: source, limits: limits)
        } catch {
            throw TransportError(.protocolError, error.description, url: job.url, isRetryable: false)
        }
    }
}

/// A chunk whose fetched bytes do not match the index (thrown by ``ChunkRangeSink`` through
/// the transport, which rethrows it unchanged).
struct ChunkMismatch: Error {
    /// The chunk's number in the index.
    var chunk: Int
}

/// Collects an index in memory, refusing more than `limit` bytes before holding them.
final class IndexSink: TransferSink, @unchecked Sendable {
    let url: URL
    let limit: Int
    let answer: @Sendable (AuthChallenge) async -> AuthChallengeDisposition
    private(set) var data = Data()

    init(url: URL, limit: Int, answer: @escaping @Sendable (AuthChallenge) async -> AuthChallengeDisposition) {
        self.url = url
        self.limit = limit
        self.answer = answer
    }

    private func tooLarge(_ count: Int64) -> TransportError {
        TransportError(.protocolError, "chunk index \(url.redactedString): \(count) bytes or more, above the \(limit) an index may have here",
                       url: url, isRetryable: false)
    }

    func begin(_ response: TransferResponse) throws {
        if let length = response.expectedLength, length > Int64(limit) { throw tooLarge(length) }
        data = Data()
    }

    func write(_ bytes: UnsafeRawBufferPointer) async throws { _ = try tryWrite(bytes) }

    func tryWrite(_ bytes: UnsafeRawBufferPointer) throws -> Bool {
        guard data.count + bytes.count <= limit else { throw tooLarge(Int64(data.count + bytes.count)) }
        data.append(contentsOf: bytes)
        return true
    }

    func whenWritable(_ callback: @escaping @Sendable () -> Void) { callback() }

    func challenge(_ challenge: AuthChallenge) async -> AuthChallengeDisposition { await answer(challenge) }
}

/// Takes the bytes of one fetched range of an indexed asset, checks each chunk's SHA-256 as it
/// completes, and passes only whole verified chunks on to the asset's sink, in order.
///
/// The answer is refused in ``begin(_:)``, before a byte is written, unless it is exactly the
/// range asked for, of a resource of the index's length (and of the version the earlier ranges
/// came from). Memory: the chunk being received plus what one transport call hands over.
final class ChunkRangeSink: TransferSink, @unchecked Sendable {
    let outer: PartialFileSink
    let index: ChunkIndex
    let chunks: Range<Int>
    let range: Range<Int64>
    let url: URL
    let indexURL: URL
    let expectedValidator: ResourceValidator?
    private(set) var validator: ResourceValidator?
    private var began = false
    private var received: Int64 = 0
    /// Bytes from the first chunk not yet handed to `outer`.
    private var staged: [UInt8] = []
    /// The first chunk not yet handed on, and the first not yet verified.
    private var nextToWrite: Int
    private var nextToVerify: Int
    /// Bytes at the start of `staged` that are verified chunks.
    private var verified = 0
    /// Bytes of verified chunks handed on.
    private(set) var verifiedBytes: Int64 = 0

    init(outer: PartialFileSink, index: ChunkIndex, chunks: Range<Int>, url: URL, indexURL: URL, expectedValidator: ResourceValidator?) {
        self.outer = outer
        self.index = index
        self.chunks = chunks
        let last = index.chunks[chunks.upperBound - 1]
        range = index.chunks[chunks.lowerBound].offset..<last.offset + Int64(last.length)
        self.url = url
        self.indexURL = indexURL
        self.expectedValidator = expectedValidator
        nextToWrite = chunks.lowerBound
        nextToVerify = chunks.lowerBound
    }

    var shownRange: String { "\(range.lowerBound)-\(range.upperBound - 1)" }
    /// Whether every chunk of the range was handed on.
    var isComplete: Bool { nextToWrite == chunks.upperBound }

    func begin(_ response: TransferResponse) throws {
        guard !began else { throw TransportError(.protocolError, "transport called begin twice", url: url, isRetryable: false) }
        let shown = url.redactedString
        if let length = response.expectedLength, length != index.fileSize {
            throw TransportError(.sourceChanged, "\(shown) has \(length) bytes, its chunk index \(indexURL.redactedString) says \(index.fileSize)",
                                 url: url, isRetryable: false)
        }
        let end = response.end ?? response.expectedLength ?? index.fileSize
        guard response.offset == range.lowerBound, end == range.upperBound else {
            throw TransportError(.protocolError, "\(shown) answered the range \(shownRange) with bytes \(response.offset)-\(end - 1)"
                                 + (response.end == nil ? " (the rest of the resource: does it serve ranges?)" : "") + "; nothing of it was written",
                                 url: url, isRetryable: false)
        }
        if let expectedValidator, response.validator != expectedValidator {
            throw TransportError(.sourceChanged, "\(shown) answered the range \(shownRange) from another version (\(response.validator?.description ?? "no validator"), "
                                 + "the earlier ranges came with \(expectedValidator))", url: url)
        }
        validator = response.validator
        began = true
    }

    func write(_ bytes: UnsafeRawBufferPointer) async throws {
        try take(bytes)
        try await drain()
    }

    func tryWrite(_ bytes: UnsafeRawBufferPointer) throws -> Bool {
        // What the sink pushed back is offered first, the same chunk again.
        while nextToWrite < nextToVerify {
            guard try handOnOne() else { return false }
        }
        try take(bytes)
        while nextToWrite < nextToVerify {
            guard try handOnOne() else { break }
        }
        return true
    }

    func whenWritable(_ callback: @escaping @Sendable () -> Void) {
        if nextToWrite < nextToVerify { outer.whenWritable(callback) } else { callback() }
    }

    func challenge(_ challenge: AuthChallenge) async -> AuthChallengeDisposition { await outer.challenge(challenge) }

    /// Hands the verified chunks still held to the asset's sink.
    func drain() async throws {
        while nextToWrite < nextToVerify {
            let length = index.chunks[nextToWrite].length
            try await outer.write(Data(staged[..<length]))
            handedOn(length)
        }
    }

    /// Stages `bytes` and verifies the chunks they complete.
    private func take(_ bytes: UnsafeRawBufferPointer) throws {
        guard began else { throw TransportError(.protocolError, "transport wrote data before calling begin", url: url, isRetryable: false) }
        guard received + Int64(bytes.count) <= Int64(range.count) else {
            throw TransportError(.protocolError, "\(url.redactedString) sent more than the \(range.count) bytes of the range \(shownRange)", url: url, isRetryable: false)
        }
        staged.append(contentsOf: bytes)
        received += Int64(bytes.count)
        while nextToVerify < chunks.upperBound {
            let chunk = index.chunks[nextToVerify]
            guard staged.count - verified >= chunk.length else { break }
            let digest = staged.withUnsafeBytes { SHA256Value(SHA256.hash(data: UnsafeRawBufferPointer(rebasing: $0[verified..<verified + chunk.length]))) }
            guard digest == chunk.sha256 else { throw ChunkMismatch(chunk: nextToVerify) }
            verified += chunk.length
            nextToVerify += 1
        }
    }

    /// Offers the first verified chunk to the asset's sink without waiting.
    private func handOnOne() throws -> Bool {
        let length = index.chunks[nextToWrite].length
        guard try staged.withUnsafeBytes({ try outer.tryWrite(UnsafeRawBufferPointer(rebasing: $0[..<length])) }) else { return false }
        handedOn(length)
        return true
    }

    private func handedOn(_ length: Int) {
        staged.removeFirst(length)
        verified -= length
        verifiedBytes += Int64(length)
        nextToWrite += 1
    }
}
