#if canImport(Glibc)
import Glibc
#endif
import Foundation
import PaperboyFraming

/// A pipe fed one chunk per `read`, so a test decides exactly where the reader's reads are cut
/// and how much is there for it to take.
///
/// ``FrameReader`` calls its `wait` before each `read`: ``wait(_:)`` writes the next chunk then
/// (only once the previous one is read whole) and closes the write end when the chunks run out.
/// A `read` on a pipe returns what is there up to what it asks for, so each read sees exactly the
/// chunk, or the part of it that fits in the reader's buffer. The pipe holds 1 MiB: a chunk is
/// written whole without blocking, and the reader could take all of it at once if it asked.
/// Everything runs on the calling thread; nothing waits on time.
final class ChunkedPipe {
    /// The pipe's capacity, and so the largest chunk.
    static let capacity = 1 << 20

    /// The end the reader reads.
    let readEnd: Int32
    private var writeEnd: Int32
    private var chunks: ArraySlice<Data>
    /// Bytes written into the pipe so far.
    private(set) var written = 0
    /// How many times the reader asked to wait (once before each `read`).
    private(set) var waits = 0

    init(chunks: [Data]) throws(PipeError) {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { throw PipeError("pipe: \(String(cString: strerror(errno)))") }
        readEnd = ends[0]
        writeEnd = ends[1]
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        self.chunks = chunks[...]
        // F_SETPIPE_SZ (1031): Glibc's module does not show it.
        guard fcntl(writeEnd, 1031, Int32(Self.capacity)) >= Self.capacity else {
            close(readEnd)
            close(writeEnd)
            throw PipeError("cannot make a pipe of \(Self.capacity) bytes: \(String(cString: strerror(errno))) (see /proc/sys/fs/pipe-max-size)")
        }
        // A chunk that does not fit is a broken test, not a hang.
        _ = fcntl(writeEnd, F_SETFL, fcntl(writeEnd, F_GETFL) | O_NONBLOCK)
    }

    /// `stream` cut after each offset of `cuts` (offsets outside the stream are ignored).
    convenience init(_ stream: Data, cutAt cuts: [Int] = []) throws(PipeError) {
        var pieces: [Data] = []
        var start = 0
        for cut in cuts.sorted() where cut > start && cut < stream.count {
            pieces.append(stream.subdata(in: start..<cut))
            start = cut
        }
        if start < stream.count { pieces.append(stream.subdata(in: start..<stream.count)) }
        try self.init(chunks: pieces)
    }

    deinit {
        close(readEnd)
        if writeEnd >= 0 { close(writeEnd) }
    }

    /// Bytes in the pipe, not read yet.
    var unread: Int { unreadBytes(readEnd) }

    /// Bytes the reader has taken from the pipe.
    var taken: Int { written - unread }

    /// The reader's `wait`: writes the next chunk once the last one is read whole; at the end,
    /// closes the write end (the reader then sees the end of input).
    func wait(_ fd: Int32) throws(FrameIOError) {
        waits += 1
        guard unread == 0 else { return }
        guard let chunk = chunks.popFirst() else {
            if writeEnd >= 0 {
                close(writeEnd)
                writeEnd = -1
            }
            return
        }
        let wrote = chunk.withUnsafeBytes { Glibc.write(writeEnd, $0.baseAddress, chunk.count) }
        guard wrote == chunk.count else {
            throw .system("the test's chunk of \(chunk.count) bytes did not fit in the pipe (\(wrote) written)")
        }
        written += wrote
    }
}

/// A pipe the test could not make.
struct PipeError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Bytes queued for reading on `fd` (`FIONREAD`), or -1.
func unreadBytes(_ fd: Int32) -> Int {
    var count: Int32 = 0
    return ioctl(fd, UInt(FIONREAD), &count) == 0 ? Int(count) : -1
}

/// A connected pair of Unix stream sockets.
func socketPair() throws -> (Int32, Int32) {
    var pair: [Int32] = [-1, -1]
    guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair) == 0 else {
        throw PipeError("socketpair: \(String(cString: strerror(errno)))")
    }
    return (pair[0], pair[1])
}
