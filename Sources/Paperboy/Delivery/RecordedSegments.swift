/// The ranges of a partial file past its bytes without a gap that were written, made durable,
/// and recorded with the asset's validator: a resumed transfer of the same version does not fetch
/// them again (``TransferJob/heldRanges``).
///
/// Ordered, disjoint, non-empty, and never adjacent (adjacent ranges are one). At most
/// ``limit`` are kept: beyond that, the smallest are left out (fetched again), so that a record
/// stays small whatever the work stealing cut.
package struct RecordedSegments: Sendable, Hashable {
    /// The most ranges recorded per asset.
    package static let limit = 32

    package private(set) var ranges: [Range<Int64>]

    /// No range.
    package static let none = RecordedSegments(coalescing: [])

    /// `ranges` (in any order, overlapping or adjacent) joined, the empty ones left out, and the
    /// ``limit`` largest kept.
    package init(coalescing ranges: [Range<Int64>]) {
        var joined: [Range<Int64>] = []
        for range in ranges.filter({ !$0.isEmpty }).sorted(by: { $0.lowerBound < $1.lowerBound }) {
            if let last = joined.last, range.lowerBound <= last.upperBound {
                joined[joined.count - 1] = last.lowerBound..<max(last.upperBound, range.upperBound)
            } else {
                joined.append(range)
            }
        }
        if joined.count > Self.limit {
            let kept = joined.sorted { $0.count > $1.count }.prefix(Self.limit)
            joined = kept.sorted { $0.lowerBound < $1.lowerBound }
        }
        self.ranges = joined
    }

    package var isEmpty: Bool { ranges.isEmpty }

    /// Bytes the ranges hold.
    package var bytes: Int64 { ranges.reduce(0) { $0 + ($1.upperBound - $1.lowerBound) } }

    /// The ranges that can still be on disk when the file's bytes without a gap end at `offset`
    /// and it is `size` bytes long: those starting past `offset` and ending within `size`.
    package func trusted(after offset: Int64, within size: Int64) -> RecordedSegments {
        RecordedSegments(coalescing: ranges.filter { $0.lowerBound > offset && $0.upperBound <= size })
    }

    // MARK: Stored form

    /// As the store keeps it: `start-end` pairs (end exclusive), comma-separated.
    package var stored: String {
        ranges.map { "\($0.lowerBound)-\($0.upperBound)" }.joined(separator: ",")
    }

    /// The ranges of a stored value; nil when it is not one (a damaged row then holds none:
    /// the bytes are fetched again).
    package init?(stored: String) {
        var ranges: [Range<Int64>] = []
        for pair in stored.split(separator: ",") {
            let bounds = pair.split(separator: "-", omittingEmptySubsequences: false)
            guard bounds.count == 2, let lower = Int64(bounds[0]), let upper = Int64(bounds[1]), lower >= 0, lower < upper else { return nil }
            ranges.append(lower..<upper)
        }
        self.init(coalescing: ranges)
    }
}
