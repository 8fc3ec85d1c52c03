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
/// chunk before it reaches the file. A chunk here is any ``PieceIndex``'s piece: a chunk index's
/// chunk (checked by its SHA-256) or a zsync control file's block (by its MD4).
///
/// It stands where a transport's `transfer` stands for an asset fetched whole, in front of the
/// same sink: `begin` once (the index's length, and its ``PieceIndex/validator`` (the whole
/// file's digest) as the validator, so that a resume continues only the same version), then
/// whole verified chunks in order. The partial file therefore always ends at a chunk boundary,
/// the whole file's SHA-256 is checked by the sink at the end as for any asset (a zsync control
/// file's SHA-1 by ``checkWholeFile(fd:length:url:)``), and delivery is unchanged.
///
/// A transfer that continues from bytes on disk first checks their chunks against the index
/// and fetches each bad one again alone, written in place (``repair(_:transport:sink:sourceValidator:)``):
/// a few bad bytes in a partial file cost their chunks, not the file.
final class ChunkedTransfer: Sendable {
    /// What an index fetched for an asset may describe: 2^18 chunks (9 MiB of index; 8 GiB of
    /// file at the standard average chunk), of a file up to 1 TiB.
    static let indexLimits = ChunkIndex.Limits(maxFileSize: 1 << 40, maxChunks: 1 << 18)

    /// What a zsync control file fetched for an asset may describe: 2^21 blocks (at most 40 MiB
    /// of control file; 8 GiB of file at `zsyncmake`'s 4 KiB blocks), of a file up to 1 TiB.
    static let zsyncLimits = ZsyncIndex.Limits(maxFileSize: 1 << 40, maxBlocks: 1 << 21)

    /// How often one chunk is fetched again after its bytes did not match, before the asset fails.
    static let refetches = 2

    /// Chunks of a partial file read and checked per turn off the cooperative pool, between
    /// which a cancellation is seen (at most 64 MiB at the standard maximum chunk).
    static let checkedPerTurn = 256

    let plan: ChunkPlan
    let indexURL: URL
    /// Where the partial file's chunks are read back and checked, off the cooperative pool.
    let durability: Durability
    private let counts = Mutex<(reused: Int64, fetched: Int64)>((0, 0))

    init(plan: ChunkPlan, indexURL: URL, durability: Durability) {
        self.plan = plan
        self.indexURL = indexURL
        self.durability = durability
    }

    /// Bytes copied from files the library holds, and bytes fetched, so far.
    var bytes: (reused: Int64, fetched: Int64) { counts.withLock { $0 } }

    /// Fills `sink` from `job.offset` (a chunk boundary) to the end, after checking (and
    /// repairing) the chunks of the first `job.offset` bytes already in the file.
    ///
    /// - Throws: the sink's and the transport's errors; a ``TransportError`` naming the chunk,
    ///   its offset and the URL when a chunk still does not match after ``refetches`` fetches.
    func run(_ job: TransferJob, transport: any Transport, into sink: PartialFileSink) async throws {
        let index = plan.index
        var sourceValidator: ResourceValidator?
        if job.offset > 0 {
            sink.verifiedPrefix = try await repair(job, transport: transport, sink: sink, sourceValidator: &sourceValidator)
        }
        try sink.begin(TransferResponse(offset: job.offset, expectedLength: index.fileSize, validator: index.validator))
        var steps = plan.steps(after: job.offset)
        let files = plan.seeds.map { open($0.path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC) }
        defer { for file in files where file >= 0 { close(file) } }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: index.largestPiece, alignment: 16)
        defer { buffer.deallocate() }
        var failures: [Int: Int] = [:]
        var position = 0
        while position < steps.count {
            try Task.checkCancellation()
            switch steps[position] {
            case .copy(let chunk, let seed, let offset):
                let length = index.length(ofPiece: chunk)
                let bytes = UnsafeRawBufferPointer(rebasing: buffer[..<length])
                if files[seed] >= 0, case .success(length) = POSIX.readFully(files[seed], into: UnsafeMutableRawBufferPointer(rebasing: buffer[..<length]), at: offset),
                   index.piece(chunk, matches: bytes) {
                    try await sink.writeCopied(bytes)
                    counts.withLock { $0.reused += Int64(length) }
                } else {
                    // The file changed since it was planned: fetched instead.
                    steps.insert(.fetch(chunks: chunk..<chunk + 1), at: position + 1)
                }
            case .fetch(let chunks):
                let rangeSink = ChunkRangeSink(outer: sink, index: index, chunks: chunks, url: job.url, indexURL: indexURL,
                                               expectedValidator: sourceValidator)
                do {
                    try await fetch(into: rangeSink, job, transport: transport, sourceValidator: &sourceValidator)
                } catch let mismatch as ChunkMismatch {
                    let failed = failures[mismatch.chunk, default: 0] + 1
                    failures[mismatch.chunk] = failed
                    guard failed <= Self.refetches else { throw stillBad(mismatch.chunk, fetches: failed, url: job.url) }
                    // Fetched again alone, then the rest of the range.
                    var again: [ChunkPlan.Step] = [.fetch(chunks: mismatch.chunk..<mismatch.chunk + 1)]
                    if mismatch.chunk + 1 < chunks.upperBound { again.append(.fetch(chunks: mismatch.chunk + 1..<chunks.upperBound)) }
                    steps.insert(contentsOf: again, at: position + 1)
                }
            }
            position += 1
        }
    }

    /// Fetches the range of `rangeSink` (its chunks) into it, from the version of the source the
    /// earlier ranges came from (`sourceValidator`, set by the first answer).
    ///
    /// - Throws: ``ChunkMismatch`` once the verified chunks before the bad one are handed on;
    ///   the transport's errors; `.connectionLost` when the range ended early.
    private func fetch(into rangeSink: ChunkRangeSink, _ job: TransferJob, transport: any Transport,
                       sourceValidator: inout ResourceValidator?) async throws {
        var ranged = job
        ranged.offset = rangeSink.range.lowerBound
        ranged.rangeEnd = rangeSink.range.upperBound
        ranged.validator = sourceValidator
        ranged.connectionsPerAsset = 1
        defer { counts.withLock { $0.fetched += rangeSink.verifiedBytes } }
        do {
            try await transport.transfer(ranged, into: rangeSink)
            try await rangeSink.drain()
        } catch let mismatch as ChunkMismatch {
            try await rangeSink.drain()
            sourceValidator = sourceValidator ?? rangeSink.validator
            throw mismatch
        }
        sourceValidator = sourceValidator ?? rangeSink.validator
        guard rangeSink.isComplete else {
            throw TransportError(.connectionLost, "\(job.url.redactedString) ended the range \(rangeSink.shownRange) early", url: job.url)
        }
    }

    /// The error for chunk `number` of `url` that did not match its SHA-256 in `fetches` fetches.
    private func stillBad(_ number: Int, fetches: Int, url: URL) -> TransportError {
        let index = plan.index
        let offset = index.offset(ofPiece: number)
        return TransportError(
            .protocolError,
            "\(index.pieceName) \(number) (bytes \(offset)-\(offset + Int64(index.length(ofPiece: number)) - 1)) of \(url.redactedString) "
                + "did not match its \(index.pieceCheck) in \(indexURL.redactedString) in \(fetches) fetches",
            url: url, isRetryable: false)
    }

    /// Checks the chunks of the first `job.offset` bytes of the partial file against the index,
    /// and fetches each one that does not match again alone, written in place at its offset.
    ///
    /// The prefix is read once: when the sink checks the whole file's SHA-256, the hash of the
    /// checked (and repaired) prefix is returned for it (``PartialFileSink/verifiedPrefix``),
    /// and it does not read the prefix again. Nothing is recorded: a kill during the repair
    /// leaves chunks that are good or bad, and the next resume checks them all again.
    ///
    /// - Throws: as ``run(_:transport:into:)``; the sink's error for a chunk it cannot write.
    private func repair(_ job: TransferJob, transport: any Transport, sink: PartialFileSink,
                        sourceValidator: inout ResourceValidator?) async throws -> (hasher: SHA256, length: Int64)? {
        let index = plan.index
        let end = index.firstPiece(atOrAfter: job.offset)
        var hasher: SHA256? = sink.context.expectedSHA256 == nil ? nil : SHA256()
        var next = 0
        while next < end {
            try Task.checkCancellation()
            let (fd, from, through, before) = (sink.fd, next, min(end, next + Self.checkedPerTurn), HandedOver(hasher: hasher))
            let checked = await durability.offload { Self.check(fd: fd, index: index, chunks: from..<through, hasher: before) }
            hasher = checked.hasher.hasher
            guard let bad = checked.bad else {
                next = through
                continue
            }
            let bytes = try await fetchAlone(bad, job, transport: transport, sink: sink, sourceValidator: &sourceValidator)
            // Written in place off the cooperative pool, as the chunks were read.
            let offset = index.offset(ofPiece: bad)
            if let failure = await durability.offload({ bytes.withUnsafeBytes { POSIX.writeAll(fd, $0, at: offset) } }) {
                throw sink.writeFailure(failure)
            }
            hasher?.update(data: bytes)
            next = bad + 1
        }
        return hasher.map { ($0, job.offset) }
    }

    /// Reads `chunks` of the file `fd` and feeds their bytes to `hasher` while they match the
    /// index: the hasher then, and the first chunk that did not match or could not be read.
    private static func check(fd: Int32, index: any PieceIndex, chunks: Range<Int>, hasher: HandedOver) -> (hasher: HandedOver, bad: Int?) {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: index.largestPiece, alignment: 16)
        defer { buffer.deallocate() }
        var hasher = hasher
        for number in chunks {
            let length = index.length(ofPiece: number)
            let bytes = UnsafeMutableRawBufferPointer(rebasing: buffer[..<length])
            guard case .success(length) = POSIX.readFully(fd, into: bytes, at: index.offset(ofPiece: number)),
                  index.piece(number, matches: UnsafeRawBufferPointer(bytes)) else { return (hasher, number) }
            hasher.hasher?.update(bufferPointer: UnsafeRawBufferPointer(bytes))
        }
        return (hasher, nil)
    }

    /// The whole file's hasher, handed to the thread that checks chunks and back, never used
    /// by two at once (`SHA256` is not `Sendable`).
    private struct HandedOver: @unchecked Sendable {
        var hasher: SHA256?
    }

    /// Fetches chunk `number` alone until its bytes match the index (at most ``refetches`` times
    /// again): its bytes.
    private func fetchAlone(_ number: Int, _ job: TransferJob, transport: any Transport, sink: PartialFileSink,
                            sourceValidator: inout ResourceValidator?) async throws -> [UInt8] {
        var fetches = 0
        while true {
            try Task.checkCancellation()
            let collector = ChunkCollector(answeringFor: sink)
            let rangeSink = ChunkRangeSink(outer: collector, index: plan.index, chunks: number..<number + 1, url: job.url, indexURL: indexURL,
                                           expectedValidator: sourceValidator)
            fetches += 1
            do {
                try await fetch(into: rangeSink, job, transport: transport, sourceValidator: &sourceValidator)
                return collector.bytes
            } catch is ChunkMismatch {
                guard fetches <= Self.refetches else { throw stillBad(number, fetches: fetches, url: job.url) }
            }
        }
    }

    /// Checks the finished file's whole SHA-1 when its index is a zsync control file (read off the
    /// cooperative pool: one more read of the file, since the sink hashes SHA-256 only); a chunk
    /// index's SHA-256 is the sink's to check.
    ///
    /// - Throws: a `.checksumMismatch` ``LibraryError`` naming `url`, both digests and the control file.
    func checkWholeFile(fd: Int32, length: Int64, url: URL) async throws {
        guard let zsync = plan.index as? ZsyncIndex else { return }
        let actual = await durability.offload { () -> String? in
            var hasher = Insecure.SHA1()
            let size = 1 << 20
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: size, alignment: 16)
            defer { buffer.deallocate() }
            var offset: Int64 = 0
            while offset < length {
                let count = Int(min(Int64(size), length - offset))
                guard case .success(count) = POSIX.readFully(fd, into: UnsafeMutableRawBufferPointer(rebasing: buffer[..<count]), at: offset) else { return nil }
                hasher.update(bufferPointer: UnsafeRawBufferPointer(rebasing: buffer[..<count]))
                offset += Int64(count)
            }
            return hasher.finalize().map { String(format: "%02x", $0) }.joined()
        }
        guard let actual, actual == zsync.sha1Hex else {
            throw LibraryError(.checksumMismatch, "SHA-1 of \(url.redactedString) is \(actual ?? "unreadable"), its zsync control file "
                               + "\(indexURL.redactedString) says \(zsync.sha1Hex); the file was discarded")
        }
    }

    /// Fetches and reads the index at `job.url` through `transport`: a zsync control file when
    /// its path ends in `.zsync` (``ZsyncIndex``, within ``zsyncLimits``), otherwise a chunk
    /// index (``ChunkIndex``, within ``indexLimits``); no larger than those limits allow.
    ///
    /// - Throws: ``TransportError`` naming the index URL: the transport's, or `.protocolError`
    ///   for an index that is too large or that its reader refuses.
    static func fetchIndex(_ job: TransferJob, transport: any Transport,
                           answer: @escaping @Sendable (AuthChallenge) async -> AuthChallengeDisposition) async throws -> any PieceIndex {
        let zsync = ZsyncIndex.isControlFile(job.url)
        let sink = IndexSink(url: job.url, what: zsync ? "zsync control file" : "chunk index",
                             limit: zsync ? zsyncLimits.maxControlBytes : indexLimits.maxIndexBytes, answer: answer)
        try await transport.transfer(job, into: sink)
        let source = job.url.redactedString
        do {
            // Binary, not JSON: each format's own bounded reader.
            if zsync {
                return try ZsyncIndex.decode(sink.data,
                                             from: source, limits: zsyncLimits)
            }
            return try ChunkIndex.decode(sink.data,
                                         from: source, limits: indexLimits)
        } catch {
            throw TransportError(.protocolError, String(describing: error), url: job.url, isRetryable: false)
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
    /// What the index is, in messages: `chunk index`, `zsync control file`.
    let what: String
    let limit: Int
    let answer: @Sendable (AuthChallenge) async -> AuthChallengeDisposition
    private(set) var data = Data()

    init(url: URL, what: String, limit: Int, answer: @escaping @Sendable (AuthChallenge) async -> AuthChallengeDisposition) {
        self.url = url
        self.what = what
        self.limit = limit
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

    func write(_ bytes: UnsafeRawBufferPointer) async throws { _ = try tryWrite(bytes) }

    func tryWrite(_ bytes: UnsafeRawBufferPointer) throws -> Bool {
        guard data.count + bytes.count <= limit else { throw tooLarge(Int64(data.count + bytes.count)) }
        data.append(contentsOf: bytes)
        return true
    }

    func whenWritable(_ callback: @escaping @Sendable () -> Void) { callback() }

    func challenge(_ challenge: AuthChallenge) async -> AuthChallengeDisposition { await answer(challenge) }
}

/// Holds the verified bytes of one chunk fetched alone to repair a partial file (no more than
/// the chunk: ``ChunkRangeSink`` refuses the rest).
final class ChunkCollector: TransferSink, @unchecked Sendable {
    /// The sink whose credentials and delegates answer challenges.
    let sink: any TransferSink
    private(set) var bytes: [UInt8] = []

    init(answeringFor sink: any TransferSink) { self.sink = sink }

    func begin(_ response: TransferResponse) throws {}
    func write(_ bytes: UnsafeRawBufferPointer) async throws { self.bytes.append(contentsOf: bytes) }

    func tryWrite(_ bytes: UnsafeRawBufferPointer) throws -> Bool {
        self.bytes.append(contentsOf: bytes)
        return true
    }

    func whenWritable(_ callback: @escaping @Sendable () -> Void) { callback() }
    func challenge(_ challenge: AuthChallenge) async -> AuthChallengeDisposition { await sink.challenge(challenge) }
}

/// Takes the bytes of one fetched range of an indexed asset, checks each chunk's SHA-256 as it
/// completes, and passes only whole verified chunks on to the asset's sink (or, for a repair,
/// a ``ChunkCollector``), in order.
///
/// The answer is refused in ``begin(_:)``, before a byte is written, unless it is exactly the
/// range asked for, of a resource of the index's length (and of the version the earlier ranges
/// came from). Memory: the chunk being received plus what one transport call hands over.
final class ChunkRangeSink: TransferSink, @unchecked Sendable {
    let outer: any TransferSink
    let index: any PieceIndex
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

    init(outer: any TransferSink, index: any PieceIndex, chunks: Range<Int>, url: URL, indexURL: URL, expectedValidator: ResourceValidator?) {
        self.outer = outer
        self.index = index
        self.chunks = chunks
        let last = chunks.upperBound - 1
        range = index.offset(ofPiece: chunks.lowerBound)..<index.offset(ofPiece: last) + Int64(index.length(ofPiece: last))
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
            throw TransportError(.sourceChanged, "\(shown) has \(length) bytes, its index \(indexURL.redactedString) says \(index.fileSize)",
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
            let length = index.length(ofPiece: nextToWrite)
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
            let length = index.length(ofPiece: nextToVerify)
            guard staged.count - verified >= length else { break }
            let matches = staged.withUnsafeBytes { index.piece(nextToVerify, matches: UnsafeRawBufferPointer(rebasing: $0[verified..<verified + length])) }
            guard matches else { throw ChunkMismatch(chunk: nextToVerify) }
            verified += length
            nextToVerify += 1
        }
    }

    /// Offers the first verified chunk to the asset's sink without waiting.
    private func handOnOne() throws -> Bool {
        let length = index.length(ofPiece: nextToWrite)
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
