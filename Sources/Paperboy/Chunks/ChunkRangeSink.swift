import Crypto
import Foundation

/// Takes the bytes of one fetched range of an indexed asset, checks each chunk (``PieceIndex``) as it
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

/// A chunk whose fetched bytes do not match the index (thrown by ``ChunkRangeSink`` through
/// the transport, which rethrows it unchanged).
struct ChunkMismatch: Error {
    /// The chunk's number in the index.
    var chunk: Int
}
