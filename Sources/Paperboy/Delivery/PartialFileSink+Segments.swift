#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

/// The ranges a transfer writes through segments, beside its sequential bytes.
///
/// Only the thread making the transfer's (serialized) sink calls touches it. `package`: the
/// conformance suite's sink checks a transport's segments by the same rules.
package struct SegmentLedger: Sendable {
    package struct Entry: Sendable {
        package var range: Range<Int64>
        package var written: Int64 = 0
        /// Whether it holds bytes an earlier transfer recorded (``RecordedSegments``), rather
        /// than a segment this transfer asked for.
        var isHeld = false
        var isComplete: Bool { written == range.upperBound - range.lowerBound }
    }

    package init() {}

    /// Segments by increasing lower bound.
    package private(set) var entries: [Entry] = []
    /// Bytes written through segments and not yet absorbed into the sequential count.
    private(set) var bytes: Int64 = 0

    var isActive: Bool { !entries.isEmpty }

    /// The first byte sequential writes at `position` may not reach: the lowest segment start
    /// at or after it.
    package func sequentialLimit(from position: Int64) -> Int64? {
        entries.first { $0.range.lowerBound >= position }?.range.lowerBound
    }

    /// Where the bytes written without a gap from `position` end, segments included.
    func contiguousEnd(from position: Int64) -> Int64 {
        var end = position
        for entry in entries where entry.range.lowerBound == end {
            end += entry.written
            if !entry.isComplete { break }
        }
        return end
    }

    /// Why `range` cannot be a new segment after `position` sequential bytes of `length`, or nil.
    package func refusal(of range: Range<Int64>, after position: Int64, length: Int64) -> String? {
        if range.isEmpty { return "segment \(range) is empty" }
        if range.lowerBound < position { return "segment \(range) starts before byte \(position), already written" }
        if range.upperBound > length { return "segment \(range) ends past the \(length) bytes announced" }
        if let other = entries.first(where: { $0.range.overlaps(range) }) { return "segment \(range) overlaps segment \(other.range)" }
        return nil
    }

    /// Adds a segment, keeping the entries ordered.
    package mutating func add(_ range: Range<Int64>) {
        insert(Entry(range: range))
    }

    private mutating func insert(_ entry: Entry) {
        let index = entries.firstIndex { $0.range.lowerBound > entry.range.lowerBound } ?? entries.count
        entries.insert(entry, at: index)
    }

    /// Adds the ranges an earlier transfer recorded as complete segments (past the sequential bytes).
    mutating func hold(_ held: RecordedSegments) {
        for range in held.ranges {
            let count = range.upperBound - range.lowerBound
            insert(Entry(range: range, written: count, isHeld: true))
            bytes += count
        }
    }

    /// Forgets the held ranges that `range` overlaps: a transport that does not skip them writes
    /// them again (the same bytes, under the same validator).
    mutating func forgetHeld(overlapping range: Range<Int64>) {
        entries.removeAll { entry in
            guard entry.isHeld, entry.range.overlaps(range) else { return false }
            bytes -= entry.written
            return true
        }
    }

    /// The bytes written in segments from `position` on (where the bytes without a gap end), as
    /// a checkpoint records them once they are durable.
    func recordable(from position: Int64) -> RecordedSegments {
        RecordedSegments(coalescing: entries.compactMap { entry in
            entry.range.lowerBound >= position ? entry.range.lowerBound..<entry.range.lowerBound + entry.written : nil
        })
    }

    /// Where the next byte of segment `index` goes, or nil if `count` more would overflow it.
    package func nextOffset(of index: Int, adding count: Int64) -> Int64? {
        let entry = entries[index]
        guard entry.written + count <= entry.range.upperBound - entry.range.lowerBound else { return nil }
        return entry.range.lowerBound + entry.written
    }

    /// Counts `count` bytes written into segment `index`. A segment complete now joins the
    /// complete ones it touches (of the same kind, held or not), so that the ledger stays about
    /// as long as the segments under way, however many a transfer asks for: each write looks
    /// through it (``contiguousEnd(from:)``), and a split download asks for hundreds.
    package mutating func record(_ count: Int64, in index: Int) {
        entries[index].written += count
        bytes += count
        guard entries[index].isComplete else { return }
        if index + 1 < entries.count { join(index, index + 1) }
        if index > 0 { join(index - 1, index) }
    }

    /// Makes entries `first` and `first + 1` one when both are complete, of the same kind, and
    /// the second starts where the first ends.
    private mutating func join(_ first: Int, _ second: Int) {
        let (a, b) = (entries[first], entries[second])
        guard a.isComplete, b.isComplete, a.isHeld == b.isHeld, a.range.upperBound == b.range.lowerBound else { return }
        entries[first] = Entry(range: a.range.lowerBound..<b.range.upperBound, written: a.written + b.written, isHeld: a.isHeld)
        entries.remove(at: second)
    }

    /// Moves segments joined to the sequential bytes ending at `position` into them, and returns
    /// the new sequential end. Called once the transport is done.
    mutating func absorb(into position: Int64) -> Int64 {
        let end = contiguousEnd(from: position)
        guard end != position else { return position }
        entries.removeAll { entry in
            guard entry.range.lowerBound >= position, entry.range.lowerBound < end else { return false }
            bytes -= entry.written
            return true
        }
        return end
    }
}

extension PartialFileSink {
    /// Bytes received so far: sequential ones and those of every segment.
    var progressTotal: Int64 { written + segments.bytes }

    /// Where the bytes written without a gap from the start of the file end, segments joined
    /// to the sequential bytes included: what a checkpoint records and the SHA-256 covers.
    var contiguousEnd: Int64 { segments.contiguousEnd(from: written) }

    func segment(_ range: Range<Int64>) throws -> (any TransferSegment)? {
        guard began, let expected else {
            throw TransportError(.protocolError, "segment asked for before begin reported a length", url: context.url, isRetryable: false)
        }
        segments.forgetHeld(overlapping: range)
        if let reason = segments.refusal(of: range, after: written, length: expected) {
            throw TransportError(.protocolError, "transport asked for a bad segment: \(reason)", url: context.url, isRetryable: false)
        }
        // Segments land with pwrite: the sequential bytes go to the file first, and neither before
        // what `begin` recorded is committed (this thread is about to wait for a commit anyway).
        guard recorded.isOpen || context.store.flush() == nil else { return nil }
        recorded.open()
        try writeGathered()
        // Unless the database says the file's length proves nothing, no byte lands out of order:
        // declined, the transport goes on in order.
        guard withdrawLengthTrust() else { return nil }
        segments.add(range)
        if let hasher {
            // Bytes no longer arrive in order: the hash of the bytes so far goes on from the
            // file, as the prefix without a gap grows.
            self.hasher = nil
            prefixHasher = PrefixHasher(fd: fd, hasher: hasher, covering: written)
        }
        return PartialFileSegment(sink: self, range: range)
    }

    /// Before the first byte lands out of order: records, and writes at once, that the file's
    /// length no longer proves anything (a kill now leaves bytes past a gap). A reopen then
    /// trusts only the contiguous bytes the last checkpoint recorded, in any boot.
    ///
    /// - Returns: `false` when the database could not write it: the file must stay in order.
    func withdrawLengthTrust() -> Bool {
        let first = writtenInOrder.withLock { inOrder -> Bool in
            guard inOrder else { return false }
            inOrder = false
            var patch = AssetPatch(id: context.assetID)
            patch.checkpointBoot = .some(nil)
            context.store.submit(patch)
            return true
        }
        guard first, context.store.flush() != nil else { return true }
        // Still queued, it can only withdraw the trust later; progress records until then say
        // the file is in order, as it is.
        writtenInOrder.withLock { $0 = true }
        return false
    }

    /// Writes the next bytes of the segment `range` at their place in the file.
    func takeSegment(_ range: Range<Int64>, _ bytes: UnsafeRawBufferPointer) throws {
        guard !bytes.isEmpty else { return }
        guard let index = segments.entries.firstIndex(where: { $0.range == range }) else {
            // A complete segment joins its neighbours (``SegmentLedger/record(_:in:)``).
            let filled = segments.entries.contains { $0.isComplete && $0.range.contains(range.lowerBound) && $0.range.upperBound >= range.upperBound }
            throw TransportError(.protocolError, filled ? "transport wrote more than the \(range.count) bytes of segment \(range)"
                                                        : "segment \(range) was written after the transfer ended", url: context.url, isRetryable: false)
        }
        let count = Int64(bytes.count)
        guard let offset = segments.nextOffset(of: index, adding: count) else {
            throw TransportError(.protocolError, "transport wrote more than the \(range.count) bytes of segment \(range)", url: context.url, isRetryable: false)
        }
        try claimSpace(count)
        if let failure = Self.positionalWrite(fd, bytes, at: offset) { throw writeFailure(failure) }
        segments.record(count, in: index)
        counted()
    }

    /// `pwrite` until every byte is written; the errno of a failure, or nil.
    private static func positionalWrite(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, at offset: Int64) -> Int32? {
        guard var pointer = bytes.baseAddress else { return nil }
        var remaining = bytes.count
        var position = offset
        while remaining > 0 {
            let done = pwrite(fd, pointer, remaining, off_t(position))
            if done < 0 {
                if errno == EINTR { continue }
                return errno
            }
            pointer += done
            remaining -= done
            position += Int64(done)
        }
        return nil
    }
}

/// A segment of a ``PartialFileSink``: the sink's bandwidth limits (its flows and grants), positional writes.
final class PartialFileSegment: TransferSegment, @unchecked Sendable {
    let sink: PartialFileSink
    let range: Range<Int64>

    init(sink: PartialFileSink, range: Range<Int64>) {
        self.sink = sink
        self.range = range
    }

    func write(_ bytes: UnsafeRawBufferPointer) async throws {
        await sink.recorded.wait()
        try await sink.bandwidth.acquire(bytes.count)
        try sink.takeSegment(range, bytes)
    }

    func tryWrite(_ bytes: UnsafeRawBufferPointer) throws -> Bool {
        guard sink.recorded.isOpen, sink.bandwidth.tryTake(bytes.count) else { return false }
        try sink.takeSegment(range, bytes)
        return true
    }

    func whenWritable(_ callback: @escaping @Sendable () -> Void) {
        sink.whenWritable(callback)
    }
}
