@testable import Paperboy
import Testing

/// ``ClonePlan``: which bytes of a run are cloned and which copied, checked against the rules of
/// `FICLONERANGE` for every small case.
@Suite("clone plan")
struct ClonePlanTests {
    typealias Piece = ClonePlan.Piece

    @Test func aWholeFileReusedAtTheSameOffsetIsOneClone() {
        // 50 MB, not a multiple of the block: the last block is shared whole, at the source's end.
        let size: Int64 = 50_000_000
        #expect(ClonePlan.pieces(source: 0, destination: 0, length: size, blockSize: 4096, sourceSize: size, destinationSize: 0)
            == [Piece(.clone, source: 0, destination: 0, length: size)])
        // The same file continued from a chunk boundary of an interrupted transfer.
        #expect(ClonePlan.pieces(source: 40_960, destination: 40_960, length: size - 40_960, blockSize: 4096, sourceSize: size, destinationSize: 40_960)
            == [Piece(.clone, source: 40_960, destination: 40_960, length: size - 40_960)])
    }

    @Test func theUnalignedEdgesOfARunAreCopied() {
        // 4096 bytes apart: the same distance from a block boundary in both files.
        #expect(ClonePlan.pieces(source: 5000, destination: 904, length: 20_000, blockSize: 4096, sourceSize: 1 << 20, destinationSize: 904) == [
            Piece(.copy, source: 5000, destination: 904, length: 3192),
            Piece(.clone, source: 8192, destination: 4096, length: 16_384),
            Piece(.copy, source: 24_576, destination: 20_480, length: 424),
        ])
        // Less than a block between two boundaries: all copied, as one piece.
        #expect(ClonePlan.pieces(source: 4000, destination: 4000, length: 200, blockSize: 4096, sourceSize: 1 << 20, destinationSize: 4000)
            == [Piece(.copy, source: 4000, destination: 4000, length: 200)])
    }

    @Test func offsetsAtDifferentDistancesFromABlockAreCopied() {
        #expect(ClonePlan.pieces(source: 4096, destination: 4095, length: 1 << 20, blockSize: 4096, sourceSize: 1 << 21, destinationSize: 4095)
            == [Piece(.copy, source: 4096, destination: 4095, length: 1 << 20)])
    }

    @Test func theSourcesLastBlockIsNotClonedIntoTheMiddleOfTheDestination() {
        // The run ends at the source's end, but the destination goes on after it.
        #expect(ClonePlan.pieces(source: 0, destination: 8192, length: 5000, blockSize: 4096, sourceSize: 5000, destinationSize: 20_000) == [
            Piece(.clone, source: 0, destination: 8192, length: 4096),
            Piece(.copy, source: 4096, destination: 12_288, length: 904),
        ])
        // A run that does not end at the source's end copies its last bytes.
        #expect(ClonePlan.pieces(source: 0, destination: 0, length: 5000, blockSize: 4096, sourceSize: 5001, destinationSize: 0) == [
            Piece(.clone, source: 0, destination: 0, length: 4096),
            Piece(.copy, source: 4096, destination: 4096, length: 904),
        ])
    }

    @Test func nothingOrUnknownIsNotCloned() {
        #expect(ClonePlan.pieces(source: 0, destination: 0, length: 0, blockSize: 4096, sourceSize: 100, destinationSize: 0).isEmpty)
        #expect(ClonePlan.pieces(source: 0, destination: 0, length: -1, blockSize: 4096, sourceSize: 100, destinationSize: 0).isEmpty)
        for block: Int64 in [0, -4096] {
            #expect(ClonePlan.pieces(source: 0, destination: 0, length: 8192, blockSize: block, sourceSize: 8192, destinationSize: 0)
                == [Piece(.copy, source: 0, destination: 0, length: 8192)])
        }
        // Past the source's end (it shrank since it was planned): copied, and found short.
        #expect(ClonePlan.pieces(source: 0, destination: 0, length: 8192, blockSize: 4096, sourceSize: 8191, destinationSize: 0)
            == [Piece(.copy, source: 0, destination: 0, length: 8192)])
        #expect(ClonePlan.pieces(source: Int64.max - 10, destination: 0, length: 100, blockSize: 4096, sourceSize: Int64.max, destinationSize: 0)
            == [Piece(.copy, source: Int64.max - 10, destination: 0, length: 100)])
        #expect(ClonePlan.pieces(source: -4096, destination: 0, length: 100, blockSize: 4096, sourceSize: 8192, destinationSize: 0)
            == [Piece(.copy, source: -4096, destination: 0, length: 100)])
    }

    /// Every run of up to three blocks at every pair of offsets in two blocks, for each way the
    /// run can end against the source's and the destination's ends: the pieces cover the run
    /// exactly, each clone is one `FICLONERANGE` allows, and no byte that could be cloned is copied.
    @Test(arguments: [1, 4, 8] as [Int64])
    func everySmallRunFollowsTheRules(block: Int64) {
        var checked = 0
        for source in 0..<(2 * block) {
            for destination in 0..<(2 * block) {
                for length in 0...(3 * block) {
                    let end = source + length
                    for sourceSize in [end - 1, end, end + 1, end + block] where sourceSize >= 0 {
                        for destinationSize in [0, destination, destination + length, destination + length + 1] {
                            let pieces = ClonePlan.pieces(source: source, destination: destination, length: length, blockSize: block,
                                                          sourceSize: sourceSize, destinationSize: destinationSize)
                            check(pieces, source: source, destination: destination, length: length, block: block,
                                  sourceSize: sourceSize, destinationSize: destinationSize)
                            checked += 1
                        }
                    }
                }
            }
        }
        #expect(checked >= Int(block * block))
    }

    private func check(_ pieces: [Piece], source: Int64, destination: Int64, length: Int64, block: Int64,
                       sourceSize: Int64, destinationSize: Int64) {
        let shown = "\(length) bytes \(source) → \(destination), block \(block), sizes \(sourceSize)/\(destinationSize): \(pieces)"
        var (nextSource, nextDestination) = (source, destination)
        for piece in pieces {
            #expect(piece.length > 0 && piece.source == nextSource && piece.destination == nextDestination, "\(shown)")
            nextSource += piece.length
            nextDestination += piece.length
            guard piece.method == .clone else { continue }
            let toEnd = piece.source + piece.length == sourceSize && piece.destination + piece.length >= destinationSize
            #expect(piece.source % block == 0 && piece.destination % block == 0, "\(shown)")
            #expect(piece.length % block == 0 || toEnd, "\(shown)")
            #expect(piece.source + piece.length <= sourceSize, "\(shown)")
        }
        #expect(nextSource == source + max(0, length), "\(shown)")
        #expect(pieces.filter { $0.method == .clone }.count <= 1, "\(shown)")
        #expect(zip(pieces, pieces.dropFirst()).allSatisfy { $0.method != $1.method }, "pieces of one method are joined: \(shown)")
        let cloned = pieces.filter { $0.method == .clone }.map(\.length).reduce(0, +)
        #expect(cloned == cloneable(source: source, destination: destination, length: length, block: block,
                                    sourceSize: sourceSize, destinationSize: destinationSize), "\(shown)")
    }

    /// The bytes of the run that lie in blocks `FICLONERANGE` could share, counted block by block.
    private func cloneable(source: Int64, destination: Int64, length: Int64, block: Int64, sourceSize: Int64, destinationSize: Int64) -> Int64 {
        let end = source + length
        guard length > 0, end <= sourceSize, (source - destination) % block == 0 else { return 0 }
        var total: Int64 = 0
        var start = (source + block - 1) / block * block
        while start < end {
            if start + block <= end {
                total += block
            } else if end == sourceSize, destination + length >= destinationSize {
                // The source's last, partial block.
                total += end - start
            }
            start += block
        }
        return total
    }
}
