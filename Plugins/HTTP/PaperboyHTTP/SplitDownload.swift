import CPaperboyCurl
import Foundation
import Logging
import Paperboy
import Synchronization

/// One large resource fetched over several connections of the shared multi handle, when the
/// job allows more than one (`TransferJob.connectionsPerAsset`).
///
/// The request that calls `begin` decides, on the curl thread, as its head arrives
/// (``start(_:head:plan:url:)``): the source must serve ranges (a 206, or `Accept-Ranges: bytes`),
/// have a validator `If-Range` can carry (a strong ETag or Last-Modified, ``RangeResume/ifRange(for:)``),
/// and at least ``Settings/threshold`` bytes must be left. Then the bytes left are cut into
/// pieces (``RangeBoard``): that request streams the first into the sink, and the other
/// connections ask for the rest, each piece with `Range` and `If-Range`. A piece's answer must be
/// a 206 for exactly the bytes asked, of the same length and with the same validator; anything
/// else (a 200 with the whole file, another version) is refused before a byte is written, and
/// that connection is dropped: the others, and the first request, which then streams on past
/// its piece, finish the resource. Every byte is written on the curl thread, so no two sink
/// calls overlap, and the sink's limiter counts all of them as one transfer.
///
/// Mirrors (`TransferJob.mirrors`) are more sources of the same pieces: connection `n` asks the
/// `n`-th source still in use, counting round the URL that began and its mirrors, so that two
/// sources and four connections ask each source twice. A mirror's answer is held to the same
/// rules as any piece's (a 206 for exactly the bytes asked, the same length and validator), so a
/// mirror serving another file is refused at its head, before a byte is written. A mirror whose
/// answer is refused, fails, or stays silent for ``Settings/mirrorStallWindow`` is *demoted*:
/// it is named in the log, asked for nothing more in this transfer, the bytes it wrote are
/// kept, and the rest of its piece is left on the board for the next connection, which asks
/// another source. The URL that began is never demoted (its connection is dropped, as without
/// mirrors), and no answer to its challenges is sent to a mirror: each mirror's plan starts
/// without one.
final class SplitDownload: @unchecked Sendable {
    /// When and how finely a resource is split.
    struct Settings: Sendable {
        /// Connections at most (the first one included).
        var connections: Int
        /// Resources with fewer bytes left are not split.
        var threshold: Int64
        /// The smallest piece an idle connection takes from another, and the smallest segment.
        var minimumPiece: Int64
        /// The largest segment asked of the sink.
        var largestSegment: Int64
        /// The size the pieces dealt shrink to near the end (``RangeBoard``).
        var finalPiece: Int64
        /// How long a mirror may send nothing before it is demoted (the idle timeout of its
        /// requests); the URL that began keeps the job's idle timeout.
        var mirrorStallWindow: Duration = .seconds(60)
    }

    /// How long a mirror may send nothing before it is demoted, for a job's idle timeout: a
    /// 120th of it (0.5 s for the default 60 s), at least 250 ms (about how often the curl
    /// thread looks, ``IdleWatch``) and at most the timeout. Short, because the URL that began
    /// is there to take the mirror's piece over, with the bytes the mirror sent kept: on a
    /// 1 GiB file at 60 MB/s, a second of waiting is already 6 % of the time.
    static func stallWindow(idleTimeout: Duration) -> Duration {
        min(idleTimeout, max(.milliseconds(250), idleTimeout / 120))
    }

    /// What the request that began told the others, set once by ``start(_:head:plan:url:)``.
    private struct Resource: Sendable {
        var validator: ResourceValidator?
        var length: Int64
    }

    /// A URL pieces are asked of: the one that began (index 0), then the mirrors in their order.
    private struct Source: Sendable {
        var plan: RequestPlan
        var isMirror: Bool
        /// Set once an answer of this mirror was refused or failed: nothing more is asked of it.
        var isDemoted = false
        /// Bytes of it written.
        var bytes: Int64 = 0
    }

    private struct State: @unchecked Sendable {
        var board: RangeBoard?
        var resource: Resource?
        /// Empty until the first request began; then the URL that began, and the mirrors.
        var sources: [Source] = []
        /// The source of each connection's latest piece.
        var laneSources: [Int: Int] = [:]
        /// Requests running now, by source (``SplitProgress/Source/connections``).
        var requestsBySource: [Int: Int] = [:]
        /// Whether the request that began still runs (counted on source 0).
        var firstRequestRuns = false
        /// Segments by piece: a piece continued by another connection goes on in the same one.
        var segments: [Int: any TransferSegment] = [:]
        /// Why connections were dropped, latest last.
        var failures: [TransportError] = []
        /// `nil` until the first request began (true: split) or ended without splitting.
        var started: Bool?
        var waiter: CheckedContinuation<Bool, Never>?
    }

    let settings: Settings
    let sink: any TransferSink
    /// The mirrors' requests (without `If-Range`, given at the start), in their order.
    private let mirrors: [RequestPlan]
    /// The job's ranges the library holds, and where and with which validator it asked to
    /// continue: skipped when the answer continues that version (``TransferResponse/keepsHeldRanges(of:)``).
    private let held: (ranges: [Range<Int64>], offset: Int64, validator: ResourceValidator?)
    private let logger: Logger
    /// The asset, as logs name it.
    private let asset: String
    private let state = Mutex(State())

    init(settings: Settings, sink: any TransferSink, mirrors: [RequestPlan] = [],
         held: (ranges: [Range<Int64>], offset: Int64, validator: ResourceValidator?) = ([], 0, nil),
         logger: Logger = Logger(label: "paperboy.http"), asset: String = "") {
        self.settings = settings
        self.sink = sink
        self.mirrors = mirrors
        self.held = held
        self.logger = logger
        self.asset = asset
    }

    // MARK: Starting (curl thread)

    /// Splits the resource when the response allows it, and returns the writer through which
    /// the request that began streams the first piece; `nil` leaves the request as it is.
    func start(_ response: TransferResponse, head: ResponseHead, plan: RequestPlan, url: URL) -> PieceWriter? {
        // Held ranges of this version are skipped whatever is left around them.
        let skipped = response.keepsHeldRanges(of: (held.offset, held.validator)) ? held.ranges : []
        guard settings.connections > 1, let length = response.expectedLength,
              length - response.offset >= settings.threshold || !skipped.isEmpty,
              RangeResume.ifRange(for: response.validator) != nil,
              head.status == 206 || (head.value("accept-ranges") ?? "").lowercased().contains("bytes") else {
            return nil
        }
        let board = RangeBoard(from: response.offset, length: length, connections: settings.connections,
                               minimum: settings.minimumPiece, chunk: settings.largestSegment,
                               final: settings.finalPiece, held: skipped)
        guard board.pieces.count > 1 || board.skipsHeld else { return nil }
        var piecePlan = plan
        piecePlan.url = url
        piecePlan.followsRedirects = false
        piecePlan.ifRange = RangeResume.ifRange(for: response.validator)
        var sources = [Source(plan: piecePlan, isMirror: false)]
        for var mirror in mirrors {
            // A mirror holding another version answers 200 (the whole file), refused at its head.
            mirror.ifRange = piecePlan.ifRange
            mirror.idleTimeout = settings.mirrorStallWindow
            sources.append(Source(plan: mirror, isMirror: true))
        }
        let waiter = state.withLock { state -> CheckedContinuation<Bool, Never>? in
            state.board = board
            state.resource = Resource(validator: response.validator, length: length)
            state.sources = sources
            state.started = true
            state.requestsBySource[0] = 1
            state.firstRequestRuns = true
            defer { state.waiter = nil }
            return state.waiter
        }
        // Read when someone asks (a status); cleared by the transport when the transfer ends.
        (sink as? any SplitReportingSink)?.reportSplit { [weak self] in self?.progress }
        waiter?.resume(returning: true)
        return PieceWriter(split: self, lane: 0, piece: board.pieces[0], requested: nil)
    }

    /// The first request ended: if it did not split, the other connections have nothing to do.
    func firstRequestEnded() {
        let waiter = state.withLock { state -> CheckedContinuation<Bool, Never>? in
            if state.started == nil { state.started = false }
            if state.firstRequestRuns {
                state.firstRequestRuns = false
                state.requestsBySource[0, default: 1] -= 1
            }
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: false)
    }

    /// Whether the resource is split (once the first request's head arrived).
    var isSplit: Bool { state.withLock { $0.started == true } }

    /// Whether every piece is written.
    var isComplete: Bool { state.withLock { $0.board?.isComplete ?? false } }

    /// Waits until the first request split the resource (`true`) or ended without (`false`).
    private func waitForStart() async -> Bool {
        await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            let started = state.withLock { state -> Bool? in
                if state.started == nil { state.waiter = continuation }
                return state.started
            }
            if let started { continuation.resume(returning: started) }
        }
    }

    // MARK: The connections (async)

    /// Runs connections 1… once the first request split the resource; returns at once otherwise.
    ///
    /// - Throws: an error of the sink (which ends the whole transfer), or `CancellationError`.
    func runOtherConnections(_ engine: CurlMulti) async throws {
        guard await waitForStart() else { return }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for lane in 1..<settings.connections {
                group.addTask { try await self.runConnection(lane, engine: engine) }
            }
            try await group.waitForAll()
        }
    }

    /// Connection `lane` takes pieces until none is left, or until one of its requests to the
    /// URL that began fails or is refused (the connection is then dropped and its piece left to
    /// the others). A mirror's failure demotes the mirror, and the connection goes on with the
    /// next source in use.
    ///
    /// - Throws: an error of the sink, or `CancellationError`.
    func runConnection(_ lane: Int, engine: CurlMulti) async throws {
        while true {
            try Task.checkCancellation()
            guard let (piece, index, source) = state.withLock({ state -> (RangeBoard.Piece, Int, Source)? in
                guard let index = Self.source(for: lane, in: state.sources) else { return nil }
                var piece = state.board?.take(for: lane)
                if piece == nil, !state.sources[index].isMirror {
                    // Nothing left to halve: the URL that began takes a mirror's last piece whole.
                    let onMirrors = state.laneSources.filter { state.sources[$0.value].isMirror }.keys
                    piece = state.board?.takeOver(for: lane, from: Set(onMirrors))
                }
                guard let piece else { return nil }
                state.laneSources[lane] = index
                state.requestsBySource[index, default: 0] += 1
                return (piece, index, state.sources[index])
            }) else { return }
            var plan = source.plan
            plan.offset = piece.next
            plan.rangeEnd = piece.end
            let writer = PieceWriter(split: self, lane: lane, piece: piece, requested: piece.next..<piece.end, source: index)
            let failure: TransportError?
            do {
                defer { state.withLock { $0.requestsBySource[index, default: 1] -= 1 } }
                let request = try CurlRequest(plan: plan, sink: sink, engine: engine, piece: writer)
                failure = try self.failure(of: await engine.perform(request), writer: writer, url: plan.url)
            } catch let error as TransportError where error.code != .cancelled {
                // Only the request's set-up throws a transport error (perform reports in its outcome).
                failure = error
            }
            guard let failure else { continue }
            guard source.isMirror, demote(index, lane: lane, failure) else {
                drop(lane, failure)
                return
            }
        }
    }

    /// The source connection `lane` asks: the `lane`-th of those in use, counted round.
    private static func source(for lane: Int, in sources: [Source]) -> Int? {
        let inUse = sources.indices.filter { !sources[$0].isDemoted }
        return inUse.isEmpty ? nil : inUse[lane % inUse.count]
    }

    /// The mirror `index` failed for connection `lane`: it is demoted (named in the log once),
    /// and the connection's pieces wait for another. Returns whether a source is left in use.
    func demote(_ index: Int, lane: Int, _ failure: TransportError) -> Bool {
        let (first, left) = state.withLock { state -> (Bool, Bool) in
            state.board?.release(lane)
            state.failures.append(failure)
            let first = !state.sources[index].isDemoted
            state.sources[index].isDemoted = true
            return (first, state.sources.contains { !$0.isDemoted })
        }
        if first {
            logger.warning("asset \(asset): mirror \(mirrors[index - 1].url.redactedString) dropped for this transfer: \(failure.message)")
        }
        return left
    }

    /// The pieces, and each source's bytes and running requests, once the first request split
    /// the resource (``SplitProgress``).
    var progress: SplitProgress? {
        state.withLock { state in
            guard state.started == true, let board = state.board else { return nil }
            let sources = state.sources.indices.map { index in
                SplitProgress.Source(url: state.sources[index].plan.url.redacted, bytes: state.sources[index].bytes,
                                     connections: max(0, state.requestsBySource[index, default: 0]),
                                     isDemoted: state.sources[index].isDemoted)
            }
            return SplitProgress(pieces: board.pieces.count, piecesDone: board.pieces.count { $0.isDone }, sources: sources)
        }
    }

    /// Bytes written per URL (the one that began first), once the first request split the resource.
    var bytesBySource: [(url: URL, bytes: Int64, demoted: Bool)] {
        state.withLock { $0.sources.map { ($0.plan.url.redacted, $0.bytes, $0.isDemoted) } }
    }

    /// Logs where the bytes came from, when there were mirrors.
    func logSources() {
        guard !mirrors.isEmpty else { return }
        let parts = bytesBySource.map { "\($0.bytes) bytes from \($0.url.redactedString)\($0.demoted ? " (demoted)" : "")" }
        logger.info("asset \(asset): \(parts.joined(separator: ", "))")
    }

    /// Why a piece's request counts as failed (`nil`: it wrote its piece, or the piece was taken
    /// from it).
    ///
    /// - Throws: the sink's error, which ends the transfer.
    func failure(of outcome: CurlOutcome, writer: PieceWriter, url: URL) throws -> TransportError? {
        if let error = outcome.sinkError {
            if error is SegmentsDeclined {
                return TransportError(.ioError, "the library did not accept bytes out of order for \(url.redactedString)", url: url)
            }
            throw error
        }
        if let refusal = outcome.refusal { return refusal }
        let answered = outcome.effectiveURL.flatMap { URL(string: $0) }?.redacted ?? url.redacted
        if outcome.failedStatus, let head = outcome.head { return TransportError.http(head, url: answered) }
        guard outcome.code == CURLE_OK else { return TransportError.curl(outcome.code, detail: outcome.detail, url: answered) }
        if writer.reachedEnd { return nil }
        // A response that ended before the piece did.
        let left = state.withLock { state -> Bool in
            guard let piece = state.board?.piece(writer.piece) else { return false }
            return piece.owner == writer.lane && !piece.isDone
        }
        guard left else { return nil }
        if outcome.head == nil || outcome.head.map({ !(200..<300).contains($0.status) }) == true {
            return TransportError(.protocolError, "\(answered.redactedString) answered a range with HTTP \(outcome.head?.status ?? 0)",
                                  url: answered)
        }
        return TransportError(.connectionLost, "\(answered.redactedString) ended a range early", url: answered)
    }

    /// Drops connection `lane`: its pieces wait for another connection.
    func drop(_ lane: Int, _ failure: TransportError) {
        state.withLock { state in
            state.board?.release(lane)
            state.failures.append(failure)
        }
    }

    /// Succeeds when every byte is written; otherwise throws the latest reason a connection was
    /// dropped.
    func requireComplete(url: URL) throws {
        let (complete, left, failure) = state.withLock { ($0.board?.isComplete ?? false, $0.board?.bytesLeft ?? 0, $0.failures.last) }
        guard !complete else { return }
        throw failure ?? TransportError(.connectionLost, "\(left) bytes of \(url.redactedString) were left unfetched", url: url)
    }

    // MARK: Writing (curl thread)

    func claim(_ piece: Int, lane: Int, at position: Int64, available: Int64) -> RangeBoard.Claim {
        state.withLock { $0.board?.claim(piece, lane: lane, at: position, available: available) ?? .finished }
    }

    func wrote(_ piece: Int, count: Int64, source: Int) {
        state.withLock { state in
            state.board?.wrote(piece, count: count)
            if source < state.sources.count { state.sources[source].bytes += count }
        }
    }

    func unclaim(_ piece: Int, segmentDeclined: Bool = false) {
        state.withLock { $0.board?.unclaim(piece, segmentDeclined: segmentDeclined) }
    }

    /// The segment piece `id` writes into now: `range` asked of the sink when given, else the
    /// one asked for before.
    ///
    /// - Throws: ``SegmentsDeclined`` when the sink gives none; the sink's errors.
    func segment(for piece: Int, asking range: Range<Int64>?) throws -> any TransferSegment {
        if let range {
            guard let segment = try sink.segment(range) else { throw SegmentsDeclined() }
            state.withLock { $0.segments[piece] = segment }
            return segment
        }
        guard let segment = state.withLock({ $0.segments[piece] }) else { throw SegmentsDeclined() }
        return segment
    }

    /// Whether a piece's response is the same resource as the one that began, and exactly the
    /// bytes asked for; the refusal otherwise.
    func refusal(of head: ResponseHead, requested: Range<Int64>, url: URL) -> TransportError? {
        let source = state.withLock { $0.resource }
        guard let source else { return nil }
        let shown = url.redactedString
        guard head.status == 206 else {
            return TransportError(.sourceChanged, "\(shown) answered the range \(requested.lowerBound)-\(requested.upperBound - 1) with HTTP \(head.status) (the whole resource): its connection was dropped", url: url)
        }
        let validator = RangeResume.validator(of: head)
        guard validator == source.validator else {
            return TransportError(.sourceChanged, "\(shown) answered a range with another version (\(validator?.description ?? "no validator"), began with \(source.validator?.description ?? "none")): its connection was dropped", url: url)
        }
        guard let range = RangeResume.contentRange(of: head), range.start == requested.lowerBound,
              range.end + 1 >= requested.upperBound, range.total == source.length else {
            return TransportError(.protocolError, "\(shown) answered the range \(requested.lowerBound)-\(requested.upperBound - 1) with Content-Range '\(TerminalText.escape(head.value("content-range") ?? "none"))'", url: url)
        }
        return nil
    }
}

/// Thrown on the curl thread when the sink gives no segment: the connection is dropped, and the
/// first request streams on over the pieces nobody wrote.
struct SegmentsDeclined: Error {}

/// Writes one piece's bytes as a request receives them: what the board allows, into the sink or
/// the piece's segment. Curl thread only, one per request.
final class PieceWriter: @unchecked Sendable {
    enum Offer {
        /// Every byte was taken or skipped.
        case taken
        /// The sink pushed back: pause, and offer the same bytes again once `whenWritable` calls.
        case paused(whenWritable: (@escaping @Sendable () -> Void) -> Void)
        /// The piece is written (or was taken over): end the request.
        case finished
        case failed(any Error)
    }

    let split: SplitDownload
    let lane: Int
    let piece: Int
    let isSequential: Bool
    /// The range a piece request asked for (`nil` for the request that began).
    let requested: Range<Int64>?
    /// The source asked (an index into the split's sources; 0 is the URL that began).
    let source: Int
    /// The position of the first byte of the chunk curl offers now.
    private var position: Int64
    /// Bytes of that chunk already written or skipped before a pause (curl offers it again whole).
    private var consumed = 0
    /// Whether the request stopped because its piece was written.
    private(set) var reachedEnd = false

    init(split: SplitDownload, lane: Int, piece: RangeBoard.Piece, requested: Range<Int64>?, source: Int = 0) {
        self.split = split
        self.source = source
        self.lane = lane
        self.piece = piece.id
        isSequential = piece.isSequential
        self.requested = requested
        position = piece.next
    }

    func offer(_ bytes: UnsafeRawBufferPointer) -> Offer {
        while consumed < bytes.count {
            let at = position + Int64(consumed)
            switch split.claim(piece, lane: lane, at: at, available: Int64(bytes.count - consumed)) {
            case .finished:
                reachedEnd = true
                return .finished
            case .skip(let count):
                consumed += Int(count)
            case .write(let count, let newSegment):
                let slice = UnsafeRawBufferPointer(rebasing: bytes[consumed..<consumed + Int(count)])
                do {
                    if isSequential {
                        guard try split.sink.tryWrite(slice) else {
                            split.unclaim(piece)
                            return .paused(whenWritable: { [sink = split.sink] in sink.whenWritable($0) })
                        }
                    } else {
                        let segment: any TransferSegment
                        do {
                            segment = try split.segment(for: piece, asking: newSegment)
                        } catch let declined as SegmentsDeclined {
                            split.unclaim(piece, segmentDeclined: true)
                            return .failed(declined)
                        }
                        guard try segment.tryWrite(slice) else {
                            split.unclaim(piece)
                            return .paused(whenWritable: { segment.whenWritable($0) })
                        }
                    }
                } catch {
                    split.unclaim(piece)
                    return .failed(error)
                }
                split.wrote(piece, count: count, source: source)
                consumed += Int(count)
            }
        }
        position += Int64(bytes.count)
        consumed = 0
        return .taken
    }
}
