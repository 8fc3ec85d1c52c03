#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Crypto
import Foundation
import Synchronization

/// Live counters of a transfer, readable from any thread while it runs.
final class LiveProgress: Sendable {
    let written = Atomic<Int64>(0)
    let expected = Atomic<Int64>(-1)
    /// How a split download goes, read when asked (``SplitReportingSink``).
    let split = LockedFunction<@Sendable () -> SplitProgress?>()

    /// The figures of the split download running now, if any.
    var splitProgress: SplitProgress? { split.function?() }

    var expectedBytes: Int64? {
        let value = expected.load(ordering: .relaxed)
        return value < 0 ? nil : value
    }
}

/// Buffers of ``PartialFileSink/gatherLimit`` bytes for small bodies, kept for the next ones:
/// with one allocated and freed per file, `malloc` gave the memory back and each new buffer
/// faulted its pages in again (a page fault per 4 KiB, for every small file).
final class GatherBufferPool: Sendable {
    /// The pool every sink uses.
    static let shared = GatherBufferPool(kept: 16)

    /// Free buffers kept at most; of each, the pages of the largest body it held stay resident
    /// (at most 16 × 256 KiB).
    let kept: Int
    /// Addresses of free buffers.
    private let free = Mutex<[UInt]>([])

    init(kept: Int) { self.kept = kept }

    deinit {
        for address in free.withLock({ $0 }) { UnsafeMutableRawPointer(bitPattern: address)?.deallocate() }
    }

    /// Free buffers held now.
    var freeCount: Int { free.withLock { $0.count } }

    /// A buffer of `count` bytes (at most ``PartialFileSink/gatherLimit``); give it back with
    /// ``give(_:)``.
    func take(count: Int) -> UnsafeMutableRawBufferPointer {
        precondition(count <= PartialFileSink.gatherLimit)
        let start = free.withLock { $0.popLast() }.flatMap(UnsafeMutableRawPointer.init(bitPattern:))
            ?? UnsafeMutableRawPointer.allocate(byteCount: PartialFileSink.gatherLimit, alignment: 16)
        return UnsafeMutableRawBufferPointer(start: start, count: count)
    }

    /// Gives back a buffer from ``take(count:)``: kept for the next one, or freed when
    /// ``kept`` are already waiting.
    func give(_ buffer: UnsafeMutableRawBufferPointer) {
        guard let start = buffer.baseAddress else { return }
        let address = UInt(bitPattern: start)
        let keptIt = free.withLock { free -> Bool in
            guard free.count < kept else { return false }
            free.append(address)
            return true
        }
        if !keptIt { start.deallocate() }
    }
}

/// The core's sink: writes into the partial file, counts, hashes, checkpoints, reports progress.
///
/// No streamed byte reaches the partial file before what `begin` learnt (the validator, the
/// length, that the file grows in order in this boot) is committed to the store: a kill at any
/// instant leaves bytes that the next run continues from, never bytes it must fetch again.
/// `begin` may run on a transport's shared thread (libcurl's), so it does not wait for that
/// commit: the first `tryWrite` that would reach the file pushes back until ``recorded`` opens,
/// and the transport pauses (`write` suspends). The commit is one the store makes within a few
/// milliseconds for someone waiting (``LibraryStore/submit(_:whenRecorded:)``); the transfer
/// loses those milliseconds once, at its start.
///
/// A small body (at most ``gatherLimit``), gathered in memory, is the exception: its record joins
/// the store's next batch and its bytes are written in one call by ``finish()``, just before the
/// file is made durable and moved out of the partial folder. A kill between that write and the
/// batch leaves a tail the next run does not trust (no validator recorded) and fetches again: at
/// most ``gatherLimit`` bytes per transfer. Waiting for a commit per small file instead made a
/// sync of 1,000 × 64 KiB to ext4 about 10 % slower (one commit every 2 ms instead of every
/// 25 ms; see docs/Benchmarks.md).
///
/// The transport's calls do not overlap (the contract), so the mutable fields below are only
/// touched by one thread at a time; the checkpoint in flight runs on the durability queue and
/// only reads the immutable descriptor.
final class PartialFileSink: TransferSink, @unchecked Sendable {
    struct Context: Sendable {
        var assetID: String
        /// The partial file, for messages.
        var partialFile: URL
        var url: URL
        /// Where the transfer asks the source to continue; the partial file holds exactly this
        /// many bytes when the sink is made (the scheduler cut it there).
        var requestedOffset: Int64
        var recordedValidator: ResourceValidator?
        /// Ranges past `requestedOffset` an earlier transfer wrote, made durable and recorded
        /// with `recordedValidator` (the scheduler checked they are still in the file): kept when
        /// the source continues that version (``TransferResponse/keepsHeldRanges(of:)``).
        var held = RecordedSegments.none
        var expectedSHA256: String?
        var progressInterval: Duration
        var checkpointInterval: Duration
        /// The library's clock: when progress is reported and checkpoints are taken. Read once per
        /// write (the system clock's uptime takes no lock).
        var clock: any LibraryClock = SystemClock()
        /// The current boot, recorded with each checkpoint while the file is written in order.
        var bootID: String?
        var store: LibraryStore
        var durability: Durability
        /// Whether more bytes may be written: the library's free-space floor.
        var space: FreeSpaceGuard
        var live: LiveProgress
        var hub: @Sendable () -> AssetEventHub?
        /// The transfer continues from this many bytes of the expected total: tells the delegates,
        /// or keeps it for the first one to attach.
        var resumed: @Sendable (Int64, Int64?) -> Void = { _, _ in }
        /// Limits applied to every byte, the per-transfer one first, then the global one.
        var limiters: [BandwidthLimiter]
        var answerChallenge: @Sendable (AuthChallenge) async -> AuthChallengeDisposition
    }

    let fd: Int32
    let context: Context
    private let checkpoints = DispatchGroup()
    private let checkpointInFlight = Atomic<Bool>(false)
    /// Whether every byte of the file was written in order (no segment yet): only then is the
    /// boot recorded with progress, so that a reopen in this boot trusts the file's length.
    /// Progress is submitted under this lock, so that none recorded with the boot can follow
    /// the record that withdraws it (see ``withdrawLengthTrust()``).
    let writtenInOrder = Mutex<Bool>(true)
    /// The limits every byte from the network passes through (``Context/limiters``), shared
    /// with the segments and with the chunks fetched to repair the file.
    let bandwidth: TransferBandwidth
    /// Ranges written through ``segment(_:)`` (see PartialFileSink+Segments.swift).
    var segments = SegmentLedger()
    /// Bytes in the pieces past the gap-free prefix that the latest progress record names
    /// (``RecordedSegments``): progress of a split download the prefix does not show.
    let recordedPieceBytes = Atomic<Int64>(0)
    /// Opens once what `begin` recorded is committed: until then no streamed byte reaches the file.
    let recorded = CommitGate()

    private(set) var began = false
    /// Bytes written sequentially from the start of the file (with segments, the first segment
    /// start bounds it until ``finish()`` joins them).
    private(set) var written: Int64 = 0
    private var reported: Int64 = 0
    private var reportedOnce = false
    /// In the clock's ``LibraryClock/uptime``.
    private var lastReport: Duration
    private var nextCheckpoint: Duration
    private(set) var expected: Int64?
    private(set) var validator: ResourceValidator?
    /// The SHA-256 of the bytes written in order, fed as they pass, while the transfer began
    /// at the start of the file and asked for no segment.
    var hasher: SHA256?
    /// Instead of ``hasher`` when the transfer continued from bytes on disk or wrote segments:
    /// the SHA-256 of the prefix written without a gap (``contiguousEnd``), read back from the
    /// file as it grows.
    var prefixHasher: PrefixHasher?
    /// The SHA-256 of the first `length` bytes on disk, from whoever read them back before
    /// `begin` (``ChunkedTransfer`` checking a resumed prefix): `begin` continues from it rather
    /// than reading those bytes again.
    var verifiedPrefix: (hasher: SHA256, length: Int64)?
    /// Bytes from the start of the file ``prefixHasher`` covers so far (0 without one).
    var hashedPrefix: Int64 { prefixHasher?.hashed.load(ordering: .relaxed) ?? 0 }
    /// The offset the transfer really continued from (set by `begin`).
    private(set) var startOffset: Int64 = 0
    /// What ``finish()`` found wrong with bytes the source said were complete (a SHA-256 or a
    /// byte count), for a message that says what was tried.
    private(set) var mismatch: String?
    /// A small body's bytes, gathered in memory and written to the file in one call by
    /// ``finish()`` (or before progress is recorded), off the transport's thread: with many small
    /// files the transport's thread spent a third of its time in `write`. Taken by `begin` from
    /// ``GatherBufferPool`` when the announced rest of the body is at most ``gatherLimit``.
    private var gathered: UnsafeMutableRawBufferPointer?
    private var gatheredCount = 0
    /// Bodies up to this size (the part still to fetch) are gathered in memory.
    static let gatherLimit = 256 << 10
    /// Bodies of at least this size (the part still to fetch) are checked against the free space
    /// of the library's file system by `begin`; every byte is claimed from it as it is written.
    static let spaceCheckMinimum: Int64 = 1 << 20

    /// Why the library stopped the transfer for lack of space (the floor, or a full file
    /// system), whatever the transport made of the error it was given: the scheduler records
    /// this one.
    var storageRefusal: LibraryError? { refusal.withLock { $0 } }
    private let refusal = Mutex<LibraryError?>(nil)

    /// Remembers `error` as ``storageRefusal`` and returns it as the transport sees it.
    private func refuse(_ error: LibraryError) -> TransportError {
        refusal.withLock { $0 = error }
        return TransportError(.insufficientStorage, error.message, url: context.url, isRetryable: false, underlying: error)
    }

    /// Claims `count` bytes from the library's free-space floor before writing them.
    func claimSpace(_ count: Int64) throws(TransportError) {
        do {
            try context.space.claim(count, for: "\(context.url.redactedString) (writing \(context.partialFile.path))")
        } catch {
            throw refuse(error)
        }
    }

    /// The error for a failed write of the partial file (`errno` `code`): a full file system
    /// or quota is ``TransportError/Code/insufficientStorage`` (another attempt would fail the
    /// same way; the library records ``LibraryError/Code/insufficientStorage``), anything else
    /// a retryable `.ioError`.
    func writeFailure(_ code: Int32) -> TransportError {
        if code == ENOSPC || code == EDQUOT {
            return refuse(LibraryError(.insufficientStorage, "cannot write \(context.partialFile.path) for \(context.url.redactedString): \(SystemFailure.reason(code))",
                                       underlying: POSIXErrorCode(rawValue: code).map { POSIXError($0) }))
        }
        return TransportError(.ioError, SystemFailure.message("cannot write", context.partialFile.path, code: code), url: context.url)
    }

    init(fd: Int32, context: Context) {
        self.fd = fd
        self.context = context
        let now = context.clock.uptime
        lastReport = now
        nextCheckpoint = now + context.checkpointInterval
        if context.expectedSHA256 != nil { hasher = SHA256() }
        bandwidth = TransferBandwidth(limiters: context.limiters)
    }

    deinit {
        if let gathered { GatherBufferPool.shared.give(gathered) }
    }

    // MARK: TransferSink

    func begin(_ response: TransferResponse) throws {
        guard !began else {
            throw TransportError(.protocolError, "transport called begin twice", url: context.url, isRetryable: false)
        }
        // The numbers come from a server or a helper: range-checked here (``ByteCount``), whatever the transport.
        do throws(BoundaryError) {
            _ = try ByteCount(response.offset, door: "begin offset")
            if let length = response.expectedLength { _ = try ByteCount(length, door: "begin expectedLength") }
        } catch {
            throw TransportError(
                .protocolError, "the transport of \(context.url.redactedString) announced a bad \(error)", url: context.url, isRetryable: false)
        }
        let requested = context.requestedOffset
        if response.offset != 0 {
            if response.offset != requested {
                throw TransferRestart(reason: "source continued at byte \(response.offset), \(requested) are on disk")
            }
            if let recorded = context.recordedValidator, recorded != response.validator {
                throw TransferRestart(reason: "source changed (validator was \(recorded), now \(response.validator.map(String.init(describing:)) ?? "none"))")
            }
            if let length = response.expectedLength, length < requested {
                throw TransferRestart(reason: "source is shorter (\(length) bytes) than the \(requested) bytes on disk")
            }
        }
        if let length = response.expectedLength, case let needed = length - response.offset, needed >= Self.spaceCheckMinimum {
            // Refused before the first byte rather than at the floor, after filling the disk
            // with bytes that would have to be fetched again.
            do {
                try context.space.check(needed, for: "\(context.url.redactedString) (writing \(context.partialFile.path))")
            } catch {
                throw refuse(error)
            }
        }
        let keepsHeld = !context.held.isEmpty && response.keepsHeldRanges(of: (requested, context.recordedValidator))
        began = true
        startOffset = response.offset
        expected = response.expectedLength
        validator = response.validator
        context.live.expected.store(response.expectedLength ?? -1, ordering: .relaxed)
        // Committed before the first byte reaches the file (see the type's discussion).
        var record: AssetPatch?
        if response.offset == 0 {
            // The file holds `requested` bytes (see ``Context/requestedOffset``): none to cut when 0,
            // unless held ranges of another version lie past them.
            let cut = requested > 0 || (!context.held.isEmpty && !keepsHeld)
            if cut {
                guard POSIX.truncate(fd, to: 0) else {
                    throw TransportError(.ioError, "cannot truncate partial file: \(SystemFailure.reason())", url: context.url)
                }
            }
            written = 0
            if keepsHeld, let hasher {
                // The held bytes do not pass through the sink: hashed from the file.
                self.hasher = nil
                prefixHasher = PrefixHasher(fd: fd, hasher: hasher, covering: 0)
            }
            if cut || response.validator != nil || response.expectedLength != nil {
                var patch = AssetPatch(id: context.assetID)
                // The old bytes are gone.
                if cut { patch.bytesOnDisk = 0 }
                patch.validator = .some(response.validator)
                patch.expectedBytes = .some(response.expectedLength)
                record = patch
            }
        } else {
            written = response.offset
            // The bytes already on disk are read back and hashed from now, off the transport's thread.
            if hasher != nil {
                hasher = nil
                if let verifiedPrefix, verifiedPrefix.length == written {
                    prefixHasher = PrefixHasher(fd: fd, hasher: verifiedPrefix.hasher, covering: written)
                } else {
                    prefixHasher = PrefixHasher(fd: fd)
                }
            }
            // The file holds the recorded bytes and grows in order from here: in this boot its
            // length is trusted even before the first checkpoint (after a reboot, see Reconciler).
            record = AssetPatch(id: context.assetID)
        }
        if keepsHeld {
            // Bytes past a gap: the file's length proves nothing (see ``withdrawLengthTrust()``).
            segments.hold(context.held)
            writtenInOrder.withLock { $0 = false }
        }
        if !context.held.isEmpty {
            // Recorded with the validator above: held ranges of another version are forgotten.
            record = record ?? AssetPatch(id: context.assetID)
            record?.segments = .some(keepsHeld ? context.held : nil)
        }
        prefixHasher?.advance(to: contiguousEnd)
        if response.offset != 0 || keepsHeld { context.resumed(progressTotal, expected) }
        reported = progressTotal
        context.live.written.store(progressTotal, ordering: .relaxed)
        if let length = response.expectedLength, length > response.offset, length - response.offset <= Int64(Self.gatherLimit) {
            gathered = GatherBufferPool.shared.take(count: Int(length - response.offset))
        }
        if let record, gathered == nil {
            // Should the store give up on it, the bytes are written all the same: unrecorded,
            // the next run does not trust them (no validator, or no boot for their length), and
            // the scheduler stops the transfer because its progress cannot be recorded.
            submitProgress(record) { [recorded] _ in recorded.open() }
        } else {
            // Nothing to resume from (no validator, no length), so nothing to wait for; or a
            // gathered body, recorded with the next batch (see the type's discussion).
            if let record { submitProgress(record) }
            recorded.open()
        }
    }


    func write(_ bytes: UnsafeRawBufferPointer) async throws {
        guard began else {
            throw TransportError(.protocolError, "transport wrote data before calling begin", url: context.url, isRetryable: false)
        }
        await recorded.wait()
        try await bandwidth.acquire(bytes.count)
        try take(bytes)
    }

    func tryWrite(_ bytes: UnsafeRawBufferPointer) throws -> Bool {
        guard recorded.isOpen, bandwidth.tryTake(bytes.count) else { return false }
        try take(bytes)
        return true
    }

    /// Makes room for `count` bytes copied from a file the library holds (a run of chunks of an
    /// indexed asset, see ``ChunkedTransfer``) after the bytes written, outside the bandwidth
    /// limits, which are for the network.
    ///
    /// The caller then puts them in the file at ``written`` itself (``RangeCopier``: a clone or a
    /// copy), and they count only as ``acceptCopied(_:)`` takes them, once checked;
    /// ``endCopy()`` removes the rest from the file.
    func prepareCopy(_ count: Int64) async throws {
        guard began else {
            throw TransportError(.protocolError, "bytes copied before begin", url: context.url, isRetryable: false)
        }
        await recorded.wait()
        try admit(count)
        try writeGathered()
    }

    /// Counts `bytes`, put in the file after the bytes written (``prepareCopy(_:)``) and
    /// checked, as written.
    func acceptCopied(_ bytes: UnsafeRawBufferPointer) { accept(bytes) }

    /// After a copy: removes from the file what it put there that was not accepted, and writes
    /// on after the bytes written.
    func endCopy() throws(TransportError) {
        guard POSIX.truncate(fd, to: written) else { throw writeFailure(errno) }
    }

    func whenWritable(_ callback: @escaping @Sendable () -> Void) {
        if !recorded.isOpen {
            recorded.whenOpen { [self] in whenWritable(callback) }
            return
        }
        bandwidth.whenGranted(callback)
    }

    func challenge(_ challenge: AuthChallenge) async -> AuthChallengeDisposition {
        await context.answerChallenge(challenge)
    }

    // MARK: Writing

    private func take(_ bytes: UnsafeRawBufferPointer) throws {
        guard began else {
            throw TransportError(.protocolError, "transport wrote data before calling begin", url: context.url, isRetryable: false)
        }
        guard !bytes.isEmpty else { return }
        try admit(Int64(bytes.count))
        if let gathered, gatheredCount + bytes.count <= gathered.count {
            UnsafeMutableRawBufferPointer(rebasing: gathered[gatheredCount...]).copyMemory(from: bytes)
            gatheredCount += bytes.count
        } else {
            try writeGathered()
            if let failure = POSIX.writeAll(fd, bytes) { throw writeFailure(failure) }
        }
        accept(bytes)
    }

    /// Checks that `count` more bytes may follow the bytes written, and claims their space.
    private func admit(_ count: Int64) throws {
        if let expected, written + count > expected {
            throw TransportError(.protocolError, "source sent more than the \(expected) bytes it announced", url: context.url, isRetryable: true)
        }
        if segments.isActive { segments.forgetHeld(overlapping: written..<written + count) }
        if let limit = segments.sequentialLimit(from: written), written + count > limit {
            throw TransportError(.protocolError, "transport wrote past byte \(limit), where a segment starts", url: context.url, isRetryable: false)
        }
        try claimSpace(count)
    }

    /// Counts `bytes`, now in the file after the bytes written, as written.
    private func accept(_ bytes: UnsafeRawBufferPointer) {
        hasher?.update(bufferPointer: bytes)
        written += Int64(bytes.count)
        counted()
    }

    /// Writes the gathered bytes to the file (they follow the bytes already there) and stops
    /// gathering. On failure, `written` falls back to the bytes really in the file.
    func writeGathered() throws(TransportError) {
        guard let buffer = gathered else { return }
        gathered = nil
        defer { GatherBufferPool.shared.give(buffer) }
        let count = gatheredCount
        gatheredCount = 0
        guard count > 0 else { return }
        if let failure = POSIX.writeAll(fd, UnsafeRawBufferPointer(rebasing: buffer[..<count])) {
            written -= Int64(count)
            throw writeFailure(failure)
        }
    }

    /// After bytes landed: live counters, coalesced progress, periodic checkpoint.
    func counted() {
        context.live.written.store(progressTotal, ordering: .relaxed)
        prefixHasher?.advance(to: contiguousEnd)
        let now = context.clock.uptime
        if now - lastReport >= context.progressInterval {
            reportProgress(now: now)
        }
        if now >= nextCheckpoint, gathered == nil {
            nextCheckpoint = now + context.checkpointInterval
            checkpoint()
        }
    }

    private func reportProgress(now: Duration) {
        lastReport = now
        // Nobody to tell: the bytes count in the first report a delegate gets.
        guard let hub = context.hub(), hub.hasDelegates else { return }
        let total = progressTotal
        hub.progress(bytesWritten: total - reported, total: total, expected: expected)
        reported = total
        reportedOnce = true
    }

    /// Makes the bytes written so far durable, then records their count, off this thread.
    private func checkpoint() {
        guard checkpointInFlight.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged else { return }
        let patch = progressPatch()
        let fd = self.fd
        let recorded = patch
        let sync = context.durability.enabled
        checkpoints.enter()
        DispatchQueue.global(qos: .utility).async { [self] in
            if sync { POSIX.dataSync(fd) }
            submitProgress(recorded)
            checkpointInFlight.store(false, ordering: .releasing)
            checkpoints.leave()
        }
    }

    // MARK: Ending

    /// What is recorded once the bytes written so far are durable.
    private func progressPatch() -> AssetPatch {
        var patch = AssetPatch(id: context.assetID)
        let end = contiguousEnd
        patch.bytesOnDisk = end
        patch.validator = .some(validator)
        patch.expectedBytes = .some(expected)
        let held = segments.recordable(from: end)
        patch.segments = .some(held.isEmpty ? nil : held)
        recordedPieceBytes.store(held.bytes, ordering: .relaxed)
        return patch
    }

    /// Forgets this transfer's flows in the limiters.
    func endFlows() { bandwidth.end() }

    /// Waits for a checkpoint in flight (the descriptor must stay open until it ends).
    func waitForCheckpoints() async {
        // None in flight (always, for small files): its sync and record are done, and waiting
        // on the group would cost two thread hand-offs per file.
        guard checkpointInFlight.load(ordering: .acquiring) else { return }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            checkpoints.notify(queue: .global()) { continuation.resume() }
        }
    }

    /// Checks the transfer is complete and intact, and emits the final progress event.
    func finish() async throws(LibraryError) {
        guard began else {
            throw LibraryError(TransportError(.protocolError, "transport ended without calling begin", url: context.url, isRetryable: false))
        }
        do {
            try writeGathered()
        } catch {
            throw LibraryError(error)
        }
        // Segments joined to the sequential bytes count as written; a gap fails below.
        written = segments.absorb(into: written)
        if let expected, written != expected {
            mismatch = "it ended after \(written) of \(expected) bytes"
            throw LibraryError(TransportError(.connectionLost, "transfer ended after \(written) of \(expected) bytes", url: context.url, isRetryable: true))
        }
        if let wanted = context.expectedSHA256 {
            let actual: String
            if let prefixHasher {
                // Only the bytes not yet hashed while the transfer ran are read now.
                actual = await prefixHasher.digest(length: written) ?? "unreadable"
            } else {
                actual = PrefixHasher.hex(hasher ?? SHA256())
            }
            if actual != wanted {
                mismatch = "the SHA-256 is \(actual), expected \(wanted)"
                throw LibraryError(.checksumMismatch, "SHA-256 of \(context.url.redactedString) is \(actual), expected \(wanted); the file was discarded")
            }
        }
        if !reportedOnce || reported != written {
            if let hub = context.hub(), hub.hasDelegates {
                hub.progress(bytesWritten: written - reported, total: written, expected: expected ?? written)
                reported = written
                reportedOnce = true
            }
        }
    }

    /// After a failure or a pause: makes what was written durable and records it, so the next
    /// attempt continues from the last byte.
    func recordProgressDurably() async {
        guard began else { return }
        await recorded.wait()
        try? writeGathered()
        written = segments.absorb(into: written)
        // The segments past a gap are recorded too (``RecordedSegments``): the next transfer of
        // the same version fetches only what is missing.
        let patch = progressPatch()
        let fd = self.fd
        if context.durability.enabled { await context.durability.offload { POSIX.dataSync(fd) } }
        submitProgress(patch)
    }

    /// Submits a progress record, with the current boot while the file is written in order.
    ///
    /// - Parameter whenRecorded: see ``LibraryStore/submit(_:whenRecorded:)``.
    private func submitProgress(_ patch: AssetPatch, whenRecorded: (@Sendable (LibraryError?) -> Void)? = nil) {
        writtenInOrder.withLock { inOrder in
            var patch = patch
            patch.checkpointBoot = .some(inOrder ? context.bootID : nil)
            context.store.submit(patch, whenRecorded: whenRecorded)
        }
    }
}

extension PartialFileSink: SplitReportingSink {
    func reportSplit(_ progress: (@Sendable () -> SplitProgress?)?) {
        context.live.split.set(progress)
    }
}
