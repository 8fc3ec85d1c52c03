/// Which parts of a run of bytes copied from one file into another are cloned and which are
/// copied: the one place that decides it (``RangeCopier`` carries it out).
///
/// A clone (Linux `FICLONERANGE`, a reflink on XFS, Btrfs and others) makes the destination
/// share the source's blocks: nothing is read or written, and the bytes take no more space. The
/// file system shares whole blocks only, so it takes a range whose offsets in both files are
/// multiples of its block size, and whose length is one too unless the range ends at the end
/// of the source (its last block is then shared whole, the bytes past the end being none of the
/// file's). A run can therefore be cloned only where the two offsets are the same distance from
/// a block boundary (`(source - destination) % block == 0`): then its aligned middle is cloned
/// and the few bytes before the first boundary and after the last one are copied. A whole file
/// reused at the same offset (a shared asset, an unchanged part of a corrected issue) is cloned
/// but for the bytes of its last block, or entirely when its run ends at the source's end.
///
/// The end of the source's last block is shared only when the destination has nothing after the
/// run (it ends at or past the destination's end): cloned into the middle of a file, the bytes
/// past the source's end would replace the destination's.
package enum ClonePlan {
    /// One part of a run, in order.
    package struct Piece: Sendable, Equatable, CustomStringConvertible {
        package enum Method: Sendable, Equatable { case clone, copy }

        package var method: Method
        /// Where the piece starts in the source and in the destination.
        package var source: Int64
        package var destination: Int64
        package var length: Int64

        package init(_ method: Method, source: Int64, destination: Int64, length: Int64) {
            self.method = method
            self.source = source
            self.destination = destination
            self.length = length
        }

        package var description: String { "\(method) \(length) bytes \(source) → \(destination)" }
    }

    /// The pieces of copying `length` bytes of the source at `source` to the destination at
    /// `destination`, on a file system of blocks of `blockSize` bytes, the source having
    /// `sourceSize` bytes and the destination `destinationSize` now.
    ///
    /// Pieces are adjacent and in order, none empty, and add up to `length` (none for a run of
    /// 0 bytes). Everything is copied when the block size is unknown (0 or less), an offset is
    /// negative, or the run goes past the source's end (the copy comes short, and the caller
    /// sees that the bytes do not match).
    package static func pieces(source: Int64, destination: Int64, length: Int64, blockSize: Int64,
                               sourceSize: Int64, destinationSize: Int64) -> [Piece] {
        guard length > 0 else { return [] }
        let all = [Piece(.copy, source: source, destination: destination, length: length)]
        guard blockSize > 0, source >= 0, destination >= 0,
              case (let end, false) = source.addingReportingOverflow(length), end <= sourceSize,
              (source - destination) % blockSize == 0 else { return all }
        let head = min(length, (blockSize - source % blockSize) % blockSize)
        let middle = (length - head) / blockSize * blockSize
        var tail = length - head - middle
        let tailShared = tail > 0 && end == sourceSize && destination + length >= destinationSize
        let cloned = middle + (tailShared ? tail : 0)
        guard cloned > 0 else { return all }
        if tailShared { tail = 0 }
        var pieces: [Piece] = []
        if head > 0 { pieces.append(Piece(.copy, source: source, destination: destination, length: head)) }
        pieces.append(Piece(.clone, source: source + head, destination: destination + head, length: cloned))
        if tail > 0 { pieces.append(Piece(.copy, source: end - tail, destination: destination + length - tail, length: tail)) }
        return pieces
    }
}
