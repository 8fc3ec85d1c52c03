@testable import PaperboyHTTP
import Testing

/// The pieces of a split download (``RangeBoard``): how they are dealt, stolen, swallowed and
/// left to others.
@Suite("Pieces of a split download", .timeLimit(.minutes(1)))
struct RangeBoardTests {
    let mib: Int64 = 1 << 20

    /// Two connections: four pieces of 16 MiB for 64 MiB.
    func board(_ megabytes: Int64, connections: Int = 2, final: Int64 = 16 << 20) -> RangeBoard {
        RangeBoard(from: 0, length: megabytes * mib, connections: connections, minimum: 4 * mib, chunk: 4 * mib, final: final)
    }

    /// Pieces from the front, each a `2 × connections`-th of what is left, down to the final
    /// size (less for a small resource: one per connection), at least the minimum (a smaller
    /// rest goes with the piece before it).
    @Test func theBytesAreDealtFromTheFrontInPiecesThatShrinkToTheFinalSize() {
        let four = board(64)
        #expect(four.pieces.map { $0.start } == [0, 16 * mib, 32 * mib, 48 * mib])
        #expect(four.pieces.map { $0.end } == [16 * mib, 32 * mib, 48 * mib, 64 * mib])
        #expect(four.pieces.map(\.owner) == [0, nil, nil, nil])
        #expect(four.pieces.map(\.isSequential) == [true, false, false, false])
        // 1 GiB over four connections: 24 pieces from 128 MiB down to 16 MiB (the last one the
        // rest), not four of 256 MiB.
        let large = RangeBoard(from: 0, length: 1024 * mib, connections: 4, minimum: mib, chunk: 16 * mib, final: 16 * mib)
        let sizes = large.pieces.map { $0.end - $0.start }
        #expect(sizes.count == 24 && sizes.first == 128 * mib && sizes == sizes.sorted(by: >), "\(sizes)")
        #expect(sizes.suffix(8).allSatisfy { $0 <= 16 * mib } && sizes.reduce(0, +) == 1024 * mib, "\(sizes)")
        // 64 MiB over four connections, pieces down to 8 MiB: eight of them.
        #expect(board(64, connections: 4, final: 8 * mib).pieces.map { $0.end - $0.start } == Array(repeating: 8 * mib, count: 8))
        #expect(board(64, connections: 4).pieces.count == 4, "one piece per connection at least")
        #expect(board(10).pieces.map { $0.end - $0.start } == [5 * mib, 5 * mib])
        let resumed = RangeBoard(from: 5, length: 5 + 8 * mib, connections: 4, minimum: 4 * mib, chunk: 4 * mib, final: 16 * mib)
        #expect(resumed.pieces.map { $0.start } == [5, 5 + 4 * mib])
    }

    /// Idle connections take the pieces in order: the bytes without a gap from the start grow
    /// as each piece is written, rather than only once the first of a few large pieces is.
    @Test func idleConnectionsTakeThePiecesInOrder() {
        var board = board(64, connections: 4, final: 8 * mib)
        #expect([1, 2, 3].compactMap { board.take(for: $0)?.start } == [8 * mib, 16 * mib, 24 * mib])
        for lane in 1...3 {
            _ = board.claim(lane, lane: lane, at: Int64(lane) * 8 * mib, available: mib)
            board.wrote(lane, count: mib)
        }
        _ = board.claim(0, lane: 0, at: 0, available: 8 * mib)
        board.wrote(0, count: 8 * mib)
        #expect(board.claim(0, lane: 0, at: 8 * mib, available: mib) == .finished)
        #expect(board.take(for: 0)?.start == 32 * mib)
        // Piece 2 written to its end, a segment at a time.
        var position = 17 * mib
        while case .write(let count, _) = board.claim(2, lane: 2, at: position, available: 24 * mib - position) {
            board.wrote(2, count: count)
            position += count
        }
        #expect(position == 24 * mib && board.piece(2)?.isDone == true)
        #expect(board.take(for: 2)?.start == 40 * mib)
    }

    /// Ranges the library holds are in no piece; the sequential piece stops at the first and
    /// never swallows the piece past it.
    @Test func heldRangesLieBetweenThePieces() {
        var board = RangeBoard(from: mib, length: 64 * mib, connections: 2, minimum: 4 * mib, chunk: 4 * mib, final: 8 * mib,
                               held: [0..<mib, 8 * mib..<16 * mib, 40 * mib..<48 * mib, 64 * mib..<70 * mib])
        #expect(board.skipsHeld)
        #expect(board.pieces.map { $0.start..<$0.end }
            == [mib..<8 * mib, 16 * mib..<26 * mib, 26 * mib..<34 * mib, 34 * mib..<40 * mib, 48 * mib..<56 * mib, 56 * mib..<64 * mib])
        #expect(board.pieces.map(\.isSequential) == [true, false, false, false, false, false])
        #expect(board.bytesLeft == 47 * mib)
        // The request that began streams on past its piece: it writes up to the held range only.
        #expect(board.claim(0, lane: 0, at: mib, available: 10 * mib) == .write(7 * mib, newSegment: nil))
        board.wrote(0, count: 7 * mib)
        #expect(board.claim(0, lane: 0, at: 8 * mib, available: mib) == .finished)
        #expect(board.pieces.count == 6)
        // The idle connections take the other pieces in order, then halve the largest.
        #expect((1...5).compactMap { board.take(for: $0)?.start } == [16 * mib, 26 * mib, 34 * mib, 48 * mib, 56 * mib])
        #expect(board.take(for: 6)?.start == 21 * mib)
        // A held range at the offset leaves the sequential piece empty.
        let covered = RangeBoard(from: 0, length: 8 * mib, connections: 1, minimum: mib, chunk: mib, final: 16 * mib, held: [0..<4 * mib])
        #expect(covered.pieces.map { $0.start..<$0.end } == [0..<0, 4 * mib..<8 * mib])
    }

    @Test func anIdleConnectionTakesAFreePieceThenHalfOfTheLargestLeft() {
        var board = board(64)
        #expect(board.take(for: 1)?.start == 16 * mib)
        #expect(board.take(for: 2)?.start == 32 * mib)
        #expect(board.take(for: 3)?.start == 48 * mib)
        // Connection 2 wrote its first segment (4 MiB): 12 left, the others have 16.
        _ = board.claim(2, lane: 2, at: 32 * mib, available: 10 * mib)
        board.wrote(2, count: 4 * mib)
        let stolen = board.take(for: 4)
        // The largest left is the first piece (nothing written): its second half.
        #expect(stolen?.start == 8 * mib && stolen?.end == 16 * mib)
        #expect(board.piece(0)?.end == 8 * mib)
    }

    /// A piece too small to halve is taken whole, from its next byte, only from the connections
    /// named (a mirror's), never while a write is claimed, never the sequential one.
    @Test func anIdleConnectionTakesOverASlowConnectionsLastPieceWhole() {
        var board = RangeBoard(from: 0, length: 4 * mib, connections: 2, minimum: mib, chunk: 4 * mib, final: 2 * mib)
        _ = board.take(for: 1)
        #expect(board.claim(1, lane: 1, at: 2 * mib, available: mib / 2) == .write(mib / 2, newSegment: 2 * mib..<3 * mib))
        #expect(board.takeOver(for: 0, from: [1]) == nil, "a write is claimed")
        board.wrote(1, count: mib / 2)
        #expect(board.claim(0, lane: 0, at: 0, available: 2 * mib) == .write(2 * mib, newSegment: nil))
        board.wrote(0, count: 2 * mib)
        #expect(board.take(for: 0) == nil, "1.5 MiB cannot be halved")
        #expect(board.takeOver(for: 0, from: [2]) == nil, "connection 1 is not named")
        let taken = board.takeOver(for: 0, from: [0, 1])
        #expect(taken?.id == 1 && taken?.next == 2 * mib + mib / 2 && taken?.owner == 0)
        // The old connection's next bytes end its request; the new one continues in the segment.
        #expect(board.claim(1, lane: 1, at: 2 * mib + mib / 2, available: mib) == .finished)
        #expect(board.claim(1, lane: 0, at: 2 * mib + mib / 2, available: mib) == .write(mib / 2, newSegment: nil))
    }

    @Test func aCutNeverGoesBelowASegmentAskedFor() {
        var board = RangeBoard(from: 0, length: 32 * mib, connections: 1, minimum: 2 * mib, chunk: 6 * mib, final: 16 * mib)
        _ = board.take(for: 1)
        // A quarter of what is left of the piece, at most 6 MiB.
        #expect(board.claim(1, lane: 1, at: 16 * mib, available: mib) == .write(mib, newSegment: 16 * mib..<20 * mib))
        board.wrote(1, count: mib)
        _ = board.claim(0, lane: 0, at: 0, available: 15 * mib)
        board.wrote(0, count: 15 * mib)
        // 1 MiB left in the first piece; the second is cut halfway between its segment's end
        // and its end, not between its next byte and its end.
        let stolen = board.take(for: 2)
        #expect(stolen?.start == 26 * mib && stolen?.end == 32 * mib)
        #expect(board.piece(1)?.end == 26 * mib)
        // Segments shrink with what is left: a quarter of 6 MiB, at least the minimum.
        _ = board.claim(1, lane: 1, at: 17 * mib, available: 3 * mib)
        board.wrote(1, count: 3 * mib)
        #expect(board.claim(1, lane: 1, at: 20 * mib, available: mib) == .write(mib, newSegment: 20 * mib..<22 * mib))
    }

    @Test func theSequentialPieceSwallowsAPieceWithoutSegmentOnly() {
        var board = board(64)
        _ = board.take(for: 1)
        _ = board.take(for: 2)
        // Piece 2 has a segment; piece 1 has none (its answer was refused, say).
        _ = board.claim(2, lane: 2, at: 32 * mib, available: mib)
        board.wrote(2, count: mib)
        board.release(1)
        _ = board.claim(0, lane: 0, at: 0, available: 16 * mib)
        board.wrote(0, count: 16 * mib)
        #expect(board.claim(0, lane: 0, at: 16 * mib, available: mib) == .write(mib, newSegment: nil))
        board.wrote(0, count: mib)
        #expect(board.piece(1) == nil)
        #expect(board.piece(0)?.end == 32 * mib)
        // Connection 1, which had piece 1, finds it gone.
        #expect(board.claim(1, lane: 1, at: 16 * mib, available: mib) == .finished)
        _ = board.claim(0, lane: 0, at: 17 * mib, available: 15 * mib)
        board.wrote(0, count: 15 * mib)
        #expect(board.claim(0, lane: 0, at: 32 * mib, available: mib) == .finished)
    }

    @Test func aDroppedConnectionsPieceIsContinuedInItsSegment() {
        var board = board(64)
        _ = board.take(for: 1)
        #expect(board.claim(1, lane: 1, at: 16 * mib, available: mib) == .write(mib, newSegment: 16 * mib..<20 * mib))
        board.wrote(1, count: mib)
        board.release(1)
        let taken = board.take(for: 2)
        #expect(taken?.id == 1 && taken?.next == 17 * mib)
        // The same segment goes on: no new one until its end (a quarter of 16 MiB).
        #expect(board.claim(1, lane: 2, at: 17 * mib, available: 8 * mib) == .write(3 * mib, newSegment: nil))
        #expect(board.claim(1, lane: 1, at: 17 * mib, available: mib) == .finished)
    }

    @Test func bytesBeforeThePieceAreSkippedAndAPushBackReleasesTheClaim() {
        var board = board(64)
        _ = board.take(for: 1)
        _ = board.claim(1, lane: 1, at: 16 * mib, available: mib)
        board.wrote(1, count: mib)
        #expect(board.claim(1, lane: 1, at: 16 * mib, available: 2 * mib) == .skip(mib))
        #expect(board.claim(1, lane: 1, at: 17 * mib, available: mib) == .write(mib, newSegment: nil))
        #expect(board.piece(1)?.inFlight == mib)
        board.unclaim(1)
        #expect(board.piece(1)?.inFlight == 0)
    }

    @Test func aDeclinedSegmentStopsHandingOutPieces() {
        var board = board(64)
        _ = board.take(for: 1)
        _ = board.claim(1, lane: 1, at: 16 * mib, available: mib)
        board.unclaim(1, segmentDeclined: true)
        board.release(1)
        #expect(board.take(for: 2) == nil)
        #expect(board.piece(1)?.hasSegment == false)
        #expect(!board.isComplete && board.bytesLeft == 64 * mib)
    }
}
