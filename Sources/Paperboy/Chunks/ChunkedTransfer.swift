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
/// library holds (in runs, cloned where the file system can: ``RangeCopier``), fetches the
/// others as ranges (``TransferJob/rangeEnd``), and checks every chunk before it counts as
/// written. A chunk here is any ``PieceIndex``'s piece: a chunk index's chunk (checked by its
/// SHA-256) or a zsync control file's block (by its MD4).
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
    private let copies = Mutex(RangeCopier.Tally())

    init(plan: ChunkPlan, indexURL: URL, durability: Durability) {
        self.plan = plan
        self.indexURL = indexURL
        self.durability = durability
    }

    /// Bytes copied from files the library holds, and bytes fetched, so far.
    var bytes: (reused: Int64, fetched: Int64) { counts.withLock { $0 } }

    /// Bytes put in the partial file by each means of copying so far (cloned, copied in the
    /// kernel, read and written), checked or not.
    var copied: RangeCopier.Tally { copies.withLock { $0 } }

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
        // One per file: a file system without clones is not asked again.
        var copiers = files.map { _ in RangeCopier() }
        var failures: [Int: Int] = [:]
        var position = 0
        while position < steps.count {
            try Task.checkCancellation()
            switch steps[position] {
            case .copy(let chunks, let seed, let offset):
                let matched = files[seed] >= 0
                    ? try await copy(chunks, from: files[seed], at: offset, copier: &copiers[seed], into: sink)
                    : Array(repeating: false, count: chunks.count)
                // The file changed since it was planned: its chunks that no longer match are fetched instead.
                steps.insert(contentsOf: Self.redo(chunks, seed: seed, offset: offset, matched: matched, in: index), at: position + 1)
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

    /// Copies `chunks` from `file` (the first at `offset`) after the bytes written to the partial
    /// file with `copier` (cloned where the file system can), then reads them back from the
    /// partial file and checks each against the index, off the cooperative pool: whether each
    /// matched. The chunks before the first that did not match count as written (and reused);
    /// the bytes from it on are removed from the file.
    ///
    /// The bytes are checked where they landed, not where they came from: a file that changes
    /// while it is copied cannot leave unchecked bytes in the partial file.
    ///
    /// - Throws: the sink's errors; its error for a write that failed.
    private func copy(_ chunks: Range<Int>, from file: Int32, at offset: Int64, copier: inout RangeCopier,
                      into sink: PartialFileSink) async throws -> [Bool] {
        let index = plan.index
        let start = index.offset(ofPiece: chunks.lowerBound)
        let last = chunks.upperBound - 1
        let length = index.offset(ofPiece: last) + Int64(index.length(ofPiece: last)) - start
        try await sink.prepareCopy(length)
        let given = copier
        let (done, outcome, matched) = await durability.offload { () -> (RangeCopier, RangeCopier.Outcome, [Bool]) in
            var copier = given
            let outcome = copier.copy(from: file, at: offset, to: sink.fd, at: start, length: length)
            guard outcome.failure == nil else { return (copier, outcome, []) }
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: index.largestPiece, alignment: 16)
            defer { buffer.deallocate() }
            var matched: [Bool] = []
            var accepting = true
            for number in chunks {
                let length = index.length(ofPiece: number)
                let bytes = UnsafeMutableRawBufferPointer(rebasing: buffer[..<length])
                let good = if case .success(length) = POSIX.readFully(sink.fd, into: bytes, at: index.offset(ofPiece: number)) {
                    index.piece(number, matches: UnsafeRawBufferPointer(bytes))
                } else {
                    false
                }
                accepting = accepting && good
                if accepting { sink.acceptCopied(UnsafeRawBufferPointer(bytes)) }
                matched.append(good)
            }
            return (copier, outcome, matched)
        }
        copier = done
        copies.withLock { $0 += outcome.tally }
        if let failure = outcome.failure {
            try? sink.endCopy()
            throw sink.writeFailure(failure)
        }
        try sink.endCopy()
        let accepted = matched.firstIndex(of: false).map { chunks.lowerBound + $0 } ?? chunks.upperBound
        let reused = accepted == chunks.lowerBound ? 0 : index.offset(ofPiece: accepted - 1) + Int64(index.length(ofPiece: accepted - 1)) - start
        counts.withLock { $0.reused += reused }
        return matched
    }

    /// The steps after copying `chunks` from seed `seed` (the first at `offset`) when each
    /// `matched` or not: from the first that did not, those that did not are fetched and those
    /// that did are copied again (they were not counted, being after a gap). None when all matched.
    static func redo(_ chunks: Range<Int>, seed: Int, offset: Int64, matched: [Bool], in index: any PieceIndex) -> [ChunkPlan.Step] {
        guard let first = matched.firstIndex(of: false) else { return [] }
        var steps: [ChunkPlan.Step] = []
        var start = chunks.lowerBound + first
        while start < chunks.upperBound {
            let good = matched[start - chunks.lowerBound]
            var end = start + 1
            while end < chunks.upperBound, matched[end - chunks.lowerBound] == good { end += 1 }
            let from = offset + index.offset(ofPiece: start) - index.offset(ofPiece: chunks.lowerBound)
            steps.append(good ? .copy(chunks: start..<end, seed: seed, offset: from) : .fetch(chunks: start..<end))
            start = end
        }
        return steps
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
            let collector = ChunkCollector(for: sink)
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
    /// index (``ChunkIndex``, within ``indexLimits``); no larger than those limits allow, within
    /// the asset's bandwidth limits.
    ///
    /// - Throws: ``TransportError`` naming the index URL: the transport's, or `.protocolError`
    ///   for an index that is too large or that its reader refuses.
    static func fetchIndex(_ job: TransferJob, transport: any Transport, bandwidth: TransferBandwidth,
                           answer: @escaping @Sendable (AuthChallenge) async -> AuthChallengeDisposition) async throws -> any PieceIndex {
        let zsync = ZsyncIndex.isControlFile(job.url)
        let sink = IndexSink(url: job.url, what: zsync ? "zsync control file" : "chunk index",
                             limit: zsync ? zsyncLimits.maxControlBytes : indexLimits.maxIndexBytes, bandwidth: bandwidth, answer: answer)
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
