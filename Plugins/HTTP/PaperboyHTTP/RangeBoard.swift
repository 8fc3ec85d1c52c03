/// The pieces of one resource fetched over several connections, and who fetches each: the plan
/// a ``SplitDownload`` keeps under its lock. A value, so that every decision is tested alone.
///
/// The pieces cover the bytes still to fetch, in order, dealt from the front and taken lowest
/// first: each a `2 × connections`-th of the bytes left after the pieces before it, down to
/// `final` bytes (less for a small resource: at least one piece per connection). So the bytes
/// written without a gap from the start grow during the download, and the SHA-256 fed from them
/// (``PrefixHasher``) has only the last small pieces left to read after the last byte; with one
/// equal piece per connection, about 3/4 of the file joined the prefix only then. Large pieces
/// first keep the requests few (each costs a round trip on its connection): about 24 for 1 GiB
/// over four connections, where pieces of 16 MiB throughout would be 64. The first piece is
/// *sequential*: its bytes go to the sink itself (the request that called `begin` streams it);
/// every other piece goes into segments of the sink (``TransferSink/segment(_:)``), asked for a
/// quarter of what is left of the piece at a time (at least `minimum`, at most `chunk` bytes),
/// so that a piece can be cut without cutting a segment, finely near its end, and the sink keeps
/// few segments.
///
/// - An idle connection takes a piece nobody fetches (the lowest first), else the second half of
///   the piece with the most bytes left (work stealing), as long as both halves keep at least
///   `minimum` bytes: the connections finish within one small piece of each other.
/// - The sequential piece swallows the piece after it while that piece has no segment yet: a
///   source that answers ranges with the whole file (200), or with another version, is then
///   fetched whole by the request that began, and nothing is spliced.
/// - A connection dropped (refused, failed) leaves its piece to the others, who continue it from
///   its next byte, in the same segment.
/// - Ranges the library already holds (``TransferJob/heldRanges``, recorded by an earlier
///   transfer of the same version) are in no piece: each gap between them is dealt in pieces as
///   above, the first one sequential. The sequential piece swallows only a piece that follows it
///   without a gap.
struct RangeBoard: Sendable, Equatable {
    struct Piece: Sendable, Equatable {
        let id: Int
        /// Where the piece began; a piece with a segment beyond it cannot be swallowed.
        let start: Int64
        /// The next byte to write.
        var next: Int64
        /// The end (exclusive); lowered when another connection takes the second half.
        var end: Int64
        /// The end of the segment asked for so far (`start` when none): no cut below it.
        var committed: Int64
        /// Bytes claimed by a write under way (see ``RangeBoard/claim(_:lane:at:available:)``).
        var inFlight: Int64 = 0
        /// The connection fetching it, if any.
        var owner: Int?
        /// Whether its bytes go to the sink rather than to segments.
        let isSequential: Bool

        var isDone: Bool { next >= end }
        /// Whether its bytes go to segments already: it can no longer be swallowed.
        var hasSegment: Bool { committed > start }
        /// No cut goes below this.
        var floor: Int64 { max(next + inFlight, committed) }
    }

    /// What a connection may do with the bytes it received at a position.
    enum Claim: Sendable, Equatable {
        /// Drop this many bytes: they were written by another connection.
        case skip(Int64)
        /// Write this many bytes, into a new segment first when one is given.
        case write(Int64, newSegment: Range<Int64>?)
        /// The piece is done or no longer this connection's: stop the request.
        case finished
    }

    private(set) var pieces: [Piece]
    let minimum: Int64
    let chunk: Int64
    /// Set when the sink would not give a segment: no piece beyond the sequential one is handed out.
    private(set) var segmentsDeclined = false
    private var nextID: Int

    /// The bytes `offset..<length` dealt from the front (see the type), the first piece
    /// sequential and fetched by connection 0; segments of at most `chunk` bytes. With `held`
    /// ranges (ordered, disjoint), the gaps between them are dealt so instead.
    init(from offset: Int64, length: Int64, connections: Int, minimum: Int64, chunk: Int64, final: Int64,
         held: [Range<Int64>] = []) {
        self.minimum = max(1, minimum)
        self.chunk = max(1, chunk)
        var gaps: [Range<Int64>] = []
        let inside = held.map { $0.clamped(to: offset..<max(offset, length)) }.filter { !$0.isEmpty }
        if inside.isEmpty {
            gaps = [offset..<max(offset, length)]
        } else {
            // The first piece starts at `offset` (empty when a held range does).
            var start = offset
            for range in inside {
                if range.lowerBound > start || gaps.isEmpty { gaps.append(start..<max(start, range.lowerBound)) }
                start = max(start, range.upperBound)
            }
            if start < length { gaps.append(start..<length) }
        }
        let ways = Int64(max(1, connections))
        var left = gaps.reduce(0) { $0 + $1.upperBound - $1.lowerBound }
        // The smallest piece dealt: `final`, or less when the resource has fewer bytes than
        // one such piece per connection.
        let smallest = max(self.minimum, min(max(1, final), left / ways))
        var bounds: [Range<Int64>] = []
        for gap in gaps {
            guard !gap.isEmpty else {
                bounds.append(gap)
                continue
            }
            var start = gap.lowerBound
            while start < gap.upperBound {
                var end = min(gap.upperBound, start + max(smallest, left / (2 * ways)))
                // A rest below the minimum goes with the piece before it.
                if gap.upperBound - end < self.minimum { end = gap.upperBound }
                bounds.append(start..<end)
                left -= end - start
                start = end
            }
        }
        pieces = bounds.enumerated().map { index, range in
            Piece(id: index, start: range.lowerBound, next: range.lowerBound, end: range.upperBound, committed: range.lowerBound,
                  owner: index == 0 ? 0 : nil, isSequential: index == 0)
        }
        skipsHeld = !inside.isEmpty
        nextID = bounds.count
    }

    /// Whether ranges the library holds lie between the pieces: the resource must be fetched in
    /// pieces, or the request that began would write over them.
    let skipsHeld: Bool

    /// Whether every byte is written.
    var isComplete: Bool { pieces.allSatisfy(\.isDone) }

    /// The piece `id`, if it still exists.
    func piece(_ id: Int) -> Piece? { pieces.first { $0.id == id } }

    /// Work for the idle connection `lane`: a piece nobody fetches, else the second half of the
    /// piece with the most bytes left; `nil` when there is none worth taking.
    mutating func take(for lane: Int) -> Piece? {
        guard !segmentsDeclined else { return nil }
        if let index = pieces.firstIndex(where: { $0.owner == nil && !$0.isDone }) {
            pieces[index].owner = lane
            return pieces[index]
        }
        let candidates = pieces.indices.filter { pieces[$0].owner != nil && !pieces[$0].isDone }
        guard let victim = candidates.max(by: { pieces[$0].end - pieces[$0].floor < pieces[$1].end - pieces[$1].floor }) else {
            return nil
        }
        let floor = pieces[victim].floor
        let left = pieces[victim].end - floor
        guard left >= 2 * minimum else { return nil }
        let cut = floor + left / 2
        let taken = Piece(id: nextID, start: cut, next: cut, end: pieces[victim].end, committed: cut, owner: lane, isSequential: false)
        nextID += 1
        pieces[victim].end = cut
        pieces.insert(taken, at: victim + 1)
        return taken
    }

    /// Work for the idle connection `lane` when ``take(for:)`` has none: the whole rest of the
    /// piece with the most bytes left among those that connections `lanes` fetch (the caller's
    /// slower sources, mirrors), from its next byte, in its segment. Its old connection finds
    /// the piece no longer its own at its next write, and stops. So the end never waits for a
    /// source that trickles: a piece too small to halve is taken whole by a connection that
    /// would otherwise sit idle.
    mutating func takeOver(for lane: Int, from lanes: Set<Int>) -> Piece? {
        let candidates = pieces.indices.filter { index in
            let piece = pieces[index]
            return !piece.isSequential && !piece.isDone && piece.inFlight == 0 && piece.owner.map(lanes.contains) == true
        }
        guard let index = candidates.max(by: { pieces[$0].end - pieces[$0].next < pieces[$1].end - pieces[$1].next }) else {
            return nil
        }
        pieces[index].owner = lane
        return pieces[index]
    }

    /// What connection `lane`, fetching piece `id`, may do with `available` bytes received for
    /// position `position`. A write claims its bytes until ``wrote(_:count:)`` or ``unclaim(_:)``.
    mutating func claim(_ id: Int, lane: Int, at position: Int64, available: Int64) -> Claim {
        guard let index = pieces.firstIndex(where: { $0.id == id }), pieces[index].owner == lane else { return .finished }
        if pieces[index].isSequential {
            // Swallow the next pieces while they have no segment: their connections stop at
            // their first byte, or were refused.
            while position + available > pieces[index].end, index + 1 < pieces.count, !pieces[index + 1].hasSegment,
                  pieces[index + 1].inFlight == 0, pieces[index + 1].start == pieces[index].end {
                pieces[index].end = pieces[index + 1].end
                pieces.remove(at: index + 1)
            }
        }
        var piece = pieces[index]
        if position < piece.next { return .skip(min(available, piece.next - position)) }
        guard position == piece.next, !piece.isDone else { return .finished }
        var count = min(available, piece.end - piece.next)
        var newSegment: Range<Int64>?
        if !piece.isSequential {
            if piece.next == piece.committed {
                let size = min(chunk, max(minimum, (piece.end - piece.next) / 4))
                let segment = piece.next..<min(piece.next + size, piece.end)
                piece.committed = segment.upperBound
                newSegment = segment
            }
            count = min(count, piece.committed - piece.next)
        }
        piece.inFlight = count
        pieces[index] = piece
        return .write(count, newSegment: newSegment)
    }

    /// The claimed bytes of piece `id` were written.
    mutating func wrote(_ id: Int, count: Int64) {
        guard let index = pieces.firstIndex(where: { $0.id == id }) else { return }
        pieces[index].next += count
        pieces[index].inFlight = 0
    }

    /// The claimed bytes of piece `id` were not written (the sink pushed back); with
    /// `segmentDeclined`, the segment the claim asked for was refused too.
    mutating func unclaim(_ id: Int, segmentDeclined: Bool = false) {
        guard let index = pieces.firstIndex(where: { $0.id == id }) else { return }
        pieces[index].inFlight = 0
        if segmentDeclined {
            pieces[index].committed = pieces[index].next
            segmentsDeclined = true
        }
    }

    /// Connection `lane` fetches no more: its pieces wait for another.
    mutating func release(_ lane: Int) {
        for index in pieces.indices where pieces[index].owner == lane {
            pieces[index].owner = nil
            pieces[index].inFlight = 0
        }
    }

    /// Bytes not yet written.
    var bytesLeft: Int64 { pieces.reduce(0) { $0 + max(0, $1.end - $1.next) } }
}
