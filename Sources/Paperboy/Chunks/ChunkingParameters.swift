/// How a file is cut into chunks: the smallest, average and largest chunk, in bytes.
///
/// Cuts are content-defined (FastCDC's Gear hash with normalized chunking, docs/ChunkIndex.md):
/// an insertion moves the cuts near it only, so two versions of a file share the chunks they
/// have in common. The defaults, 8/32/128 KiB, are the measured choice (docs/ChunkIndex.md,
/// "Choosing the sizes"): about 29,000 chunks (1 MiB of index, 0.1 %) per GiB, and an edit costs
/// about 70 KB around it, where 16/64/256 KiB costs 190 KB.
package struct ChunkingParameters: Sendable, Hashable, CustomStringConvertible {
    /// No chunk but a file's last is shorter.
    package let minimum: Int
    /// The size the cut rule aims at (a power of two): below it a cut is harder to find, above
    /// it easier.
    package let average: Int
    /// No chunk is longer.
    package let maximum: Int

    /// The smallest ``minimum`` the format allows: an index holds at most one entry (36 bytes)
    /// per ``minimum`` bytes of the file, so it stays below 4 % of the file.
    package static let smallestMinimum = 1024
    /// The largest ``maximum`` the format allows: a chunk is held in memory while it is hashed.
    package static let largestMaximum = 16 << 20

    /// 8 KiB, 32 KiB, 128 KiB.
    package static let standard = ChunkingParameters(checkedMinimum: 8 << 10, average: 32 << 10, maximum: 128 << 10)

    private init(checkedMinimum minimum: Int, average: Int, maximum: Int) {
        self.minimum = minimum
        self.average = average
        self.maximum = maximum
    }

    /// Parameters the format allows: ``smallestMinimum`` ≤ minimum < average < maximum ≤
    /// ``largestMaximum``, the average a power of two; `nil` otherwise, with ``problem(minimum:average:maximum:)``
    /// saying why.
    package init?(minimum: Int, average: Int, maximum: Int) {
        guard Self.problem(minimum: minimum, average: average, maximum: maximum) == nil else { return nil }
        self.init(checkedMinimum: minimum, average: average, maximum: maximum)
    }

    /// Why these sizes are not parameters the format allows, or `nil` when they are.
    package static func problem(minimum: Int, average: Int, maximum: Int) -> String? {
        if minimum < smallestMinimum { return "a minimum chunk of \(minimum) bytes; the smallest allowed is \(smallestMinimum)" }
        if maximum > largestMaximum { return "a maximum chunk of \(maximum) bytes; the largest allowed is \(largestMaximum)" }
        if !(minimum < average && average < maximum) {
            return "chunk sizes \(minimum)/\(average)/\(maximum) are not minimum < average < maximum"
        }
        if average & (average - 1) != 0 { return "an average chunk of \(average) bytes is not a power of two" }
        return nil
    }

    /// `16/64/256 KiB`.
    package var description: String {
        if [minimum, average, maximum].allSatisfy({ $0 % 1024 == 0 }) {
            return "\(minimum >> 10)/\(average >> 10)/\(maximum >> 10) KiB"
        }
        return "\(minimum)/\(average)/\(maximum) bytes"
    }

    /// The cut rule's mask below ``average``: log2(average) + 2 of the hash's top bits (harder).
    var strictMask: UInt64 { Self.topBits(average.trailingZeroBitCount + 2) }
    /// The cut rule's mask from ``average`` on: log2(average) − 2 of the top bits (easier).
    var looseMask: UInt64 { Self.topBits(average.trailingZeroBitCount - 2) }

    private static func topBits(_ count: Int) -> UInt64 {
        count <= 0 ? 0 : count >= 64 ? .max : ~UInt64(0) << UInt64(64 - count)
    }
}
