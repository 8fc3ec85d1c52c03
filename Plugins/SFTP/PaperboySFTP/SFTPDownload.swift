import CPaperboySSH2
import Foundation
import Paperboy
import Synchronization

/// An SFTP file handle (`LIBSSH2_SFTP_HANDLE *`), used only on its session's thread.
struct SFTPHandle: @unchecked Sendable {
    let raw: OpaquePointer
}

/// An SFTP channel (`LIBSSH2_SFTP *`), one per transfer, used only on its session's thread.
///
/// libssh2 keeps the state of pending SFTP requests in this structure, so transfers sharing a
/// connection each get their own channel (OpenSSH allows `MaxSessions`, 10 by default).
struct SFTPChannel: @unchecked Sendable {
    let raw: OpaquePointer
}

/// Set once a download has called its sink's `begin`.
final class BeginFlag: Sendable {
    let value = Atomic<Bool>(false)
}

/// Size and modification time of a remote file.
struct SFTPAttributes: Sendable, Equatable {
    var size: Int64?
    var modified: UInt?
    var isFolder: Bool

    init(_ attributes: LIBSSH2_SFTP_ATTRIBUTES) {
        size = attributes.flags & PAPERBOY_SFTP_ATTR_SIZE != 0 ? Int64(clamping: attributes.filesize) : nil
        modified = attributes.flags & PAPERBOY_SFTP_ATTR_ACMODTIME != 0 ? attributes.mtime : nil
        isFolder = attributes.flags & PAPERBOY_SFTP_ATTR_PERMISSIONS != 0
            && attributes.permissions & PAPERBOY_SFTP_S_IFMT == PAPERBOY_SFTP_S_IFDIR
    }

    /// `size=…;mtime=…`, weak: SFTP version 3 has whole-second times and no inode, so a file
    /// rewritten with the same size within one second looks the same (as with HTTP Last-Modified).
    var validator: ResourceValidator? {
        guard let size, let modified else { return nil }
        return ResourceValidator("size=\(size);mtime=\(modified)", strength: .weak)
    }
}

/// One file read through an open session: open, attributes, resume decision, pipelined reads
/// into the sink, close. A large file may be split: read over two connections, which take
/// ranges from a ``RangeDealer`` (each range after the first into a segment of the sink; see
/// ``Split``).
struct SFTPDownload: Sendable {
    /// Reading a large file over two connections.
    struct Split: Sendable {
        /// Files with at least this many bytes left are split.
        var threshold: Int64
        /// The smallest range a connection is handed at a time (the last ones of a file).
        var minimumRange: Int64 { max(1 << 20, threshold / 8) }
        /// A second connection to the same host and user (set up, or reused, on demand); `nil`
        /// when it cannot be had. The caller releases it.
        var secondSession: @Sendable () async -> SSHSession?
    }

    /// A file opened on one session.
    struct OpenFile: Sendable {
        let session: SSHSession
        let channel: SFTPChannel
        let handle: SFTPHandle
    }

    let session: SSHSession
    let location: SFTPLocation
    let job: TransferJob
    let sink: any TransferSink
    let readSize: Int
    var split: Split?
    private let began = BeginFlag()

    /// Whether ``TransferSink/begin(_:)`` was called (bytes may have reached the sink).
    var hasBegun: Bool { began.value.load(ordering: .acquiring) }

    func run() async throws {
        let file = try await open(on: session)
        do {
            try await read(file)
        } catch {
            await close(file)
            throw error
        }
        await close(file)
    }

    /// Opens the SFTP channel and the file on `session`.
    private func open(on session: SSHSession) async throws -> OpenFile {
        let path = location.path
        let url = location.url
        let channel = try await session.run(idleTimeout: job.idleTimeout) { () -> SFTPChannel? in
            if let sftp = libssh2_sftp_init(session.raw) { return SFTPChannel(raw: sftp) }
            try session.check(libssh2_session_last_errno(session.raw), action: "starting the SFTP subsystem", url: url)
            return nil
        }
        do {
            let handle = try await session.run(idleTimeout: job.idleTimeout) { () -> SFTPHandle? in
                if let raw = paperboy_sftp_open_read(channel.raw, path) { return SFTPHandle(raw: raw) }
                if libssh2_session_last_errno(session.raw) == LIBSSH2_ERROR_EAGAIN { return nil }
                throw session.lastError(action: "opening the file", url: url, sftp: channel.raw)
            }
            return OpenFile(session: session, channel: channel, handle: handle)
        } catch {
            await close(session, nil, channel)
            throw error
        }
    }

    private func attributes(of file: OpenFile) async throws -> SFTPAttributes {
        let session = file.session
        let url = location.url
        return try await session.run(idleTimeout: job.idleTimeout) { () -> SFTPAttributes? in
            var attributes = LIBSSH2_SFTP_ATTRIBUTES()
            let code = paperboy_sftp_fstat(file.handle.raw, &attributes)
            guard try session.check(code, action: "reading the file's attributes", url: url, sftp: file.channel.raw) != nil else {
                return nil
            }
            return SFTPAttributes(attributes)
        }
    }

    private func read(_ file: OpenFile) async throws {
        let url = location.url
        let before = try await attributes(of: file)
        if before.isFolder {
            throw TransportError(.notFound, "\(url.redactedString) is a folder, not a file", url: url, isRetryable: false)
        }
        let validator = before.validator
        var offset = job.offset
        let changed = job.validator != nil && job.validator != validator
        if offset > 0, changed || validator == nil || offset > before.size ?? 0 { offset = 0 }
        // A job's one range, when the source version is the one asked for (else the whole file,
        // said so in `begin`); never split.
        var end: Int64?
        if let rangeEnd = job.rangeEnd, offset == job.offset, !changed {
            end = max(offset, before.size.map { min(rangeEnd, $0) } ?? rangeEnd)
            if end == before.size { end = nil }
        }
        // The second connection is made before `begin`, so that its challenges (if any) come
        // before the first byte and never overlap a write.
        let second = end == nil ? await openSecondHalf(from: offset, before) : nil
        do {
            try await read(file, before, from: offset, to: end, second: second)
        } catch {
            if let second { await close(second); second.session.release() }
            throw error
        }
        if let second { await close(second); second.session.release() }
    }

    private func read(_ file: OpenFile, _ before: SFTPAttributes, from offset: Int64, to end: Int64?, second: OpenFile?) async throws {
        let url = location.url
        began.value.store(true, ordering: .releasing)
        try sink.begin(TransferResponse(offset: offset, end: end, expectedLength: before.size, validator: before.validator))
        if let last = end ?? before.size, offset == last { return }

        let writer = SFTPWriteBehind(bufferSize: readSize, bufferCount: second == nil ? 3 : 4)
        let received: Int64
        do {
            let target = writer.addTarget(sink)
            if let second, let size = before.size, let split,
               case let dealer = RangeDealer(offset..<size, connections: 2, minimum: split.minimumRange),
               let first = dealer.next(), let next = dealer.next(), let segment = try sink.segment(next) {
                // The first range goes to the sink, the others to segments; the connections take
                // ranges until none are left, so they finish together. The first failure cancels
                // the other connection.
                let segmentTarget = writer.addTarget(SFTPWriteBehind.Target(
                    tryWrite: { try segment.tryWrite($0) }, whenWritable: { segment.whenWritable($0) }))
                received = try await withThrowingTaskGroup(of: Int64.self) { group in
                    group.addTask { try await readRanges(second, next, into: segmentTarget, then: dealer, writer: writer) }
                    group.addTask { try await readRanges(file, first, into: target, then: dealer, writer: writer) }
                    var total: Int64 = 0
                    for try await part in group { total += part }
                    return total
                }
            } else {
                received = try await readRange(file, from: offset, to: end, writer: writer, target: target)
            }
            await writer.close()
        } catch {
            // Stopped (Ctrl-C, SIGTERM, a pause, a lost connection): what was read still reaches
            // the file when the sink takes it at once, so the next attempt does not fetch it again.
            await writer.close(flushing: true)
            throw error
        }
        let after = try await attributes(of: file)
        if after != before || (end ?? before.size).map({ offset + received != $0 }) == true {
            throw TransportError(
                .sourceChanged,
                "\(url.redactedString) changed while it was read (\(offset + received) bytes read, size now \(after.size.map(String.init) ?? "unknown"))",
                url: url)
        }
    }

    /// The file opened on a second connection, when the file is large enough, this is the only
    /// transfer on the first connection (otherwise the cores are busy anyway), and the second
    /// connection sees the same version. `nil` otherwise: the file is then read in one stream.
    private func openSecondHalf(from offset: Int64, _ before: SFTPAttributes) async -> OpenFile? {
        guard let split, let size = before.size, size - offset >= split.threshold, before.validator != nil,
              session.userCount == 1, let other = await split.secondSession() else { return nil }
        guard let file = try? await open(on: other) else {
            other.release()
            return nil
        }
        guard let attributes = try? await attributes(of: file), attributes == before else {
            await close(file)
            other.release()
            return nil
        }
        return file
    }

    /// Closes the handle and the channel, even when the transfer was cancelled, and waits for it:
    /// no libssh2 call of this transfer may still run once `transfer` has returned (a program
    /// exiting then would tear OpenSSL down under the session thread's feet).
    private func close(_ file: OpenFile) async {
        await close(file.session, file.handle, file.channel)
    }

    private func close(_ session: SSHSession, _ handle: SFTPHandle?, _ channel: SFTPChannel) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            var handleClosed = handle == nil
            // Either the step finishes or the operation fails, never both.
            session.enqueue(idleTimeout: .seconds(10), onFailure: { _ in continuation.resume() }) {
                if !handleClosed, let handle {
                    if libssh2_sftp_close_handle(handle.raw) == LIBSSH2_ERROR_EAGAIN { return .blocked }
                    handleClosed = true
                }
                if libssh2_sftp_shutdown(channel.raw) == LIBSSH2_ERROR_EAGAIN { return .blocked }
                continuation.resume()
                return .finished
            }
        }
    }
}

extension SFTPDownload {
    /// Reads `[offset, end)` of an open file (to the end of the file when `end` is nil) on its
    /// session's thread into `writer`'s buffers for `target`; returns once every byte read has
    /// been written, or, when `waitsForWrites` is false, once every byte has been read.
    func readRange(
        _ file: OpenFile, from offset: Int64, to end: Int64?, writer: SFTPWriteBehind, target: Int, waitsForWrites: Bool = true
    ) async throws -> Int64 {
        let reader = SFTPReader(handle: file.handle, channel: file.channel, offset: offset, end: end, session: file.session,
                                writer: writer, target: target, url: location.url, waitsForWrites: waitsForWrites)
        return try await file.session.perform(idleTimeout: job.idleTimeout, isExclusive: false) {
            (operation, continuation: CheckedContinuation<Int64, any Error>) in
            reader.attach(operation, continuation)
        }
    }

    /// Reads `first` into `target`, then the ranges `dealer` hands out, each into a segment of
    /// the sink made when its first bytes are written; returns the bytes read once all of them
    /// have been written.
    func readRanges(
        _ file: OpenFile, _ first: Range<Int64>, into target: Int, then dealer: RangeDealer, writer: SFTPWriteBehind
    ) async throws -> Int64 {
        var received = try await readRange(file, from: first.lowerBound, to: first.upperBound, writer: writer, target: target,
                                           waitsForWrites: false)
        while let range = dealer.next() {
            try Task.checkCancellation()
            let segment = SegmentOnDemand(sink: sink, range: range, url: location.url)
            let target = writer.addTarget(SFTPWriteBehind.Target(
                tryWrite: { try segment.tryWrite($0) }, whenWritable: { segment.whenWritable($0) }))
            received += try await readRange(file, from: range.lowerBound, to: range.upperBound, writer: writer, target: target,
                                            waitsForWrites: false)
        }
        try await writer.drained()
        return received
    }
}

/// Reads one file, or one range of it, on the session thread: each `libssh2_sftp_read` keeps
/// several requests in flight; filled buffers go to an ``SFTPWriteBehind`` whose queue writes
/// them to the sink while the next ones are read and decrypted. With no free buffer (the sink
/// pushes back or the disk is slower) reading pauses.
///
/// What the process holds stays small whatever the read-ahead: libssh2 takes at most
/// ``receiveLimit`` bytes from the socket per read (the rest of the answers wait in the kernel),
/// and buffers are handed over at ``submitSize`` bytes.
final class SFTPReader: @unchecked Sendable {
    private let handle: SFTPHandle
    private let channel: SFTPChannel
    private let offset: Int64
    private let end: Int64?
    private let session: SSHSession
    private let writer: SFTPWriteBehind
    private let target: Int
    private let url: URL
    private var buffer: SFTPWriteBehind.Buffer?
    private var filled = 0
    private var received: Int64 = 0
    private var sought = false
    private var reachedEnd = false
    private var continuation: CheckedContinuation<Int64, any Error>?
    private weak var operation: SSHSession.Operation?
    /// A buffer goes to the sink once it holds this many bytes.
    private let submitSize: Int
    /// Whether the read ends only once its bytes are written (otherwise once they are queued).
    private let waitsForWrites: Bool

    /// Bytes libssh2 may take from the socket per `libssh2_sftp_read` (a few SSH packets; see
    /// ``SSHSession/withReceiveLimit(_:_:)``).
    static let receiveLimit = 64 << 10
    /// A buffer goes to the sink once it holds this many bytes (or the buffer's size, if smaller).
    ///
    /// Each read still offers libssh2 the rest of the buffer, since libssh2 sizes its read-ahead
    /// (requests in flight) on that. With the receive limit, a read fills at most about
    /// `receiveLimit` more bytes than were queued, so only the first `submitSize` bytes and a
    /// little more of each buffer are ever touched: the pages past that are never resident.
    static let submitSize = 256 << 10
    /// The smallest read near the end of a range (smaller reads would only add calls).
    static let tailReadSize = 64 << 10

    init(handle: SFTPHandle, channel: SFTPChannel, offset: Int64, end: Int64?, session: SSHSession,
         writer: SFTPWriteBehind, target: Int, url: URL, waitsForWrites: Bool = true) {
        self.waitsForWrites = waitsForWrites
        self.handle = handle
        self.channel = channel
        self.offset = offset
        self.end = end
        self.session = session
        self.writer = writer
        self.target = target
        self.url = url
        submitSize = min(Self.submitSize, writer.bufferSize)
    }

    deinit {
        if let buffer { writer.giveBack(buffer) }
    }

    func attach(_ operation: SSHSession.Operation, _ continuation: CheckedContinuation<Int64, any Error>) {
        self.operation = operation
        self.continuation = continuation
        operation.step = { [self] in step() }
        let previous = operation.fail
        operation.fail = { [self] error in
            if let buffer {
                self.buffer = nil
                writer.giveBack(buffer)
            }
            previous(error)
        }
    }

    /// Wakes this reader's operation (a buffer is free, the queue drained). Any thread.
    private var wakeUp: @Sendable () -> Void {
        { [weak operation, session] in if let operation { session.resume(operation) } }
    }

    private func step() -> SSHSession.Step {
        if let failure = writer.failure { return finish(.failure(failure)) }
        if !sought {
            libssh2_sftp_seek64(handle.raw, UInt64(offset))
            sought = true
        }
        var progressed = false
        // A bounded number of reads per step, so that other transfers on the session get turns.
        for _ in 0..<16 where !reachedEnd {
            guard let buffer = buffer ?? writer.takeBuffer(orWhenFree: wakeUp) else {
                return writer.failure.map { finish(.failure($0)) } ?? .paused
            }
            self.buffer = buffer
            var want = writer.bufferSize - filled
            if let end {
                // libssh2 asks for up to four times `want` ahead: barely past the range's end, since
                // the answers to requests beyond it are read and thrown away when the file closes.
                let left = end - offset - received
                want = Int(min(Int64(want), left, max(left / 4, Int64(Self.tailReadSize))))
            }
            if want == 0 {
                reachedEnd = true
                break
            }
            let (count, limitReached) = session.withReceiveLimit(Self.receiveLimit) {
                libssh2_sftp_read(handle.raw, (buffer.pointer + filled).assumingMemoryBound(to: CChar.self), want)
            }
            if count == Int(LIBSSH2_ERROR_EAGAIN) {
                // Bytes wait in the socket: the limit stopped libssh2, not the network.
                if limitReached { continue }
                // Keep the disk busy rather than wait for a full buffer.
                if filled > 0, writer.isIdle { submit() }
                return progressed ? .yielded : .blocked
            }
            if count < 0 {
                return finish(.failure(session.lastError(action: "reading after \(offset + received) bytes", url: url, sftp: channel.raw)))
            }
            if count == 0 {
                if let end, offset + received < end {
                    return finish(.failure(TransportError(
                        .sourceChanged, "\(url.redactedString) ended after \(offset + received) bytes, \(end) were expected", url: url)))
                }
                reachedEnd = true
                break
            }
            filled += count
            received += Int64(count)
            progressed = true
            if filled >= submitSize { submit() }
        }
        guard reachedEnd else { return .yielded }
        if filled > 0 { submit() }
        if let buffer {
            self.buffer = nil
            writer.giveBack(buffer)
        }
        if let failure = writer.failure { return finish(.failure(failure)) }
        if !waitsForWrites || writer.isIdle { return finish(.success(received)) }
        writer.whenDrained(wakeUp)
        return .paused
    }

    private func submit() {
        guard let buffer else { return }
        writer.submit(buffer, count: filled, to: target)
        self.buffer = nil
        filled = 0
    }

    private func finish(_ result: Result<Int64, any Error>) -> SSHSession.Step {
        if let buffer {
            self.buffer = nil
            writer.giveBack(buffer)
        }
        continuation?.resume(with: result)
        continuation = nil
        return .finished
    }
}
