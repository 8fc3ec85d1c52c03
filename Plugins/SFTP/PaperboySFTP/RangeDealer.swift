import Foundation
import Paperboy
import Synchronization

/// Hands out the ranges of a file to the connections reading it in parallel: large ranges
/// first, smaller ones as the end nears (a quarter of what is left with two connections, never
/// less than `minimum`), so that the connections finish within one small range of each other.
///
/// With a fixed half each, the faster connection finished first and the other read alone for
/// the last few tenths of a second of a 1 GiB download, with a core left idle.
final class RangeDealer: Sendable {
    private let state: Mutex<Range<Int64>>
    /// Connections taking ranges.
    let connections: Int
    /// The smallest range handed out (the last one may be up to twice as large).
    let minimum: Int64

    /// Deals out `range` to `connections` connections.
    init(_ range: Range<Int64>, connections: Int, minimum: Int64) {
        state = Mutex(range)
        self.connections = max(1, connections)
        self.minimum = max(1, minimum)
    }

    /// The next range to read, or nil when every byte has been handed out. Any thread.
    func next() -> Range<Int64>? {
        state.withLock { left -> Range<Int64>? in
            guard !left.isEmpty else { return nil }
            let count = Int64(left.count)
            var size = max(minimum, count / Int64(2 * connections))
            // No range smaller than the minimum is left behind.
            if count - size < minimum { size = count }
            let range = left.lowerBound..<left.lowerBound + size
            left = range.upperBound..<left.upperBound
            return range
        }
    }
}

/// A segment of the sink, asked for when its first bytes are written, on the write-behind
/// queue: asking for it then never overlaps another call to the sink (see
/// ``TransferSink/segment(_:)``).
final class SegmentOnDemand: @unchecked Sendable {
    private let sink: any TransferSink
    private let range: Range<Int64>
    private let url: URL
    /// Touched only by the write-behind queue's drain, one call at a time.
    private var segment: (any TransferSegment)?

    init(sink: any TransferSink, range: Range<Int64>, url: URL) {
        self.sink = sink
        self.range = range
        self.url = url
    }

    func tryWrite(_ bytes: UnsafeRawBufferPointer) throws -> Bool {
        if segment == nil {
            guard let made = try sink.segment(range) else {
                throw TransportError(.protocolError, "the sink refused segment \(range) of \(url.redactedString)", url: url, isRetryable: false)
            }
            segment = made
        }
        return try segment!.tryWrite(bytes)
    }

    func whenWritable(_ callback: @escaping @Sendable () -> Void) {
        if let segment { segment.whenWritable(callback) } else { callback() }
    }
}
