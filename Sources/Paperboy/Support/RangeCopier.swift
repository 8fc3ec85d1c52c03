#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import CPaperboySystem

/// Copies a range of one open file into another by the cheapest means the file systems offer:
/// a clone of the part ``ClonePlan`` allows (`FICLONERANGE`: the blocks are shared, nothing is
/// read or written), a copy in the kernel (`copy_file_range`) of the rest, and a read and a
/// write through a buffer where neither is possible.
///
/// A means the file systems refuse for good (no clones there, another file system) is not tried
/// again by the same copier: keep one per source file. A clone refused for a range (`EINVAL`) is
/// copied, and tried again for the next.
struct RangeCopier: Sendable {
    /// The means tried before a read and a write.
    struct Methods: OptionSet, Sendable {
        let rawValue: Int
        static let clone = Methods(rawValue: 1)
        static let inKernel = Methods(rawValue: 2)
        static let all: Methods = [.clone, .inKernel]
    }

    /// Bytes put in place by each means.
    struct Tally: Sendable, Equatable {
        var cloned: Int64 = 0
        var copiedInKernel: Int64 = 0
        var copied: Int64 = 0

        var total: Int64 { cloned + copiedInKernel + copied }

        static func += (tally: inout Tally, other: Tally) {
            tally.cloned += other.cloned
            tally.copiedInKernel += other.copiedInKernel
            tally.copied += other.copied
        }
    }

    /// What one ``copy(from:at:to:at:length:)`` did.
    struct Outcome: Sendable {
        var tally = Tally()
        /// The `errno` of a write to the destination that failed (a full file system), if one did.
        var failure: Int32?
    }

    /// Buffers for a read and a write hold at most this many bytes.
    static let bufferSize = 1 << 20

    /// Clone errors after which a copier stops trying clones: the file system has none, or the
    /// two files are on different ones.
    private static let noClones: Set<Int32> = [EOPNOTSUPP, ENOTTY, ENOSYS, EXDEV, EPERM, EBADF]
    /// `copy_file_range` errors that are the destination's: the read and write would fail too.
    private static let destinationFull: Set<Int32> = [ENOSPC, EDQUOT, EFBIG]

    /// The means still tried.
    private(set) var methods: Methods

    init(methods: Methods = .all) { self.methods = methods }

    /// Copies `length` bytes of `source` at `sourceOffset` to `destination` at
    /// `destinationOffset`, on the cooperative pool's behalf (it blocks: call it off the pool).
    ///
    /// Fewer bytes are copied when the source ends first or cannot be read: the caller checks
    /// what landed. A write that fails stops the copy with its `errno`.
    mutating func copy(from source: Int32, at sourceOffset: Int64, to destination: Int32, at destinationOffset: Int64, length: Int64) -> Outcome {
        let pieces = ClonePlan.pieces(source: sourceOffset, destination: destinationOffset, length: length,
                                      blockSize: methods.contains(.clone) ? Self.blockSize(of: destination) : 0,
                                      sourceSize: POSIX.fileSize(source), destinationSize: POSIX.fileSize(destination))
        var outcome = Outcome()
        for piece in pieces {
            if piece.method == .clone, methods.contains(.clone) {
                let code = paperboy_clone_range(source, piece.source, piece.length, destination, piece.destination)
                if code == 0 {
                    outcome.tally.cloned += piece.length
                    continue
                }
                if Self.noClones.contains(code) { methods.remove(.clone) }
            }
            guard copy(piece, from: source, to: destination, into: &outcome) else { break }
        }
        return outcome
    }

    /// Copies `piece` in the kernel, else through a buffer: whether the next piece may follow
    /// (`false` when the source ended or a write failed).
    private mutating func copy(_ piece: ClonePlan.Piece, from source: Int32, to destination: Int32, into outcome: inout Outcome) -> Bool {
        var (from, to, left) = (piece.source, piece.destination, piece.length)
        while left > 0, methods.contains(.inKernel) {
            let copied = paperboy_copy_file_range(source, &from, destination, &to, UInt(min(left, 1 << 30)))
            if copied > 0 {
                outcome.tally.copiedInKernel += copied
                left -= copied
                continue
            }
            if copied == 0 { return false }
            let code = errno
            if Self.destinationFull.contains(code) {
                outcome.failure = code
                return false
            }
            // Not between these files (another file system, an old kernel): read and write.
            methods.remove(.inKernel)
        }
        guard left > 0 else { return true }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: Int(min(left, Int64(Self.bufferSize))), alignment: 16)
        defer { buffer.deallocate() }
        while left > 0 {
            let slice = UnsafeMutableRawBufferPointer(rebasing: buffer[..<Int(min(left, Int64(buffer.count)))])
            guard case .success(let read) = POSIX.readFully(source, into: slice, at: from), read > 0 else { return false }
            if let failure = POSIX.writeAll(destination, UnsafeRawBufferPointer(rebasing: slice[..<read]), at: to) {
                outcome.failure = failure
                return false
            }
            outcome.tally.copied += Int64(read)
            (from, to, left) = (from + Int64(read), to + Int64(read), left - Int64(read))
            if read < slice.count { return false }
        }
        return true
    }

    /// The block size of the file system holding `fd`, whose multiples a clone's offsets must
    /// be; 0 when unknown.
    static func blockSize(of fd: Int32) -> Int64 {
        var info = statvfs()
        guard fstatvfs(fd, &info) == 0 else { return 0 }
        return Int64(info.f_frsize > 0 ? info.f_frsize : info.f_bsize)
    }
}
