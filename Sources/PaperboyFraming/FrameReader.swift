#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

/// Reads frames from a descriptor with blocking system calls (run it on a dedicated thread).
///
/// It buffers at most 64 KiB beyond the frame being read, so back-pressure still reaches the
/// peer: nothing more is read until the next frame is asked for. Every length is checked
/// against the caller's limit before a byte of the payload is read, so a peer cannot make it
/// allocate more than that.
public struct FrameReader: Sendable {
    private var buffer = [UInt8](repeating: 0, count: 64 * 1024)
    private var start = 0
    private var end = 0
    /// The frame whose payload the input ended in, when ``next(from:maxLength:wait:)`` threw
    /// `.closed` there: its kind, length and the payload bytes read.
    package private(set) var cutFrame: (kind: String, length: Int, received: Int)?

    /// Creates a reader with an empty buffer.
    public init() {}

    /// The next frame.
    ///
    /// - Parameters:
    ///   - fd: the descriptor to read.
    ///   - maxLength: the largest payload accepted for a kind.
    ///   - wait: called before each `read`, to wait until `fd` is readable (it may throw
    ///     ``FrameIOError/timedOut(_:)`` or ``FrameIOError/abandoned``); a blocking descriptor
    ///     may pass a closure that returns at once.
    /// - Throws: ``FrameIOError``: `.garbage` and `.tooLarge` leave the stream unusable.
    public mutating func next(
        from fd: Int32, maxLength: (String) -> Int, wait: (Int32) throws(FrameIOError) -> Void
    ) throws(FrameIOError) -> Frame {
        var newline: Int?
        while newline == nil {
            newline = buffer[start..<end].firstIndex(of: UInt8(ascii: "\n"))
            if newline != nil { break }
            if end - start >= Frame.maxHeaderLength {
                throw .garbage(Frame.quote(buffer[start..<end]))
            }
            do {
                try fill(from: fd, wait: wait)
            } catch .closed where end > start {
                throw .garbage(Frame.quote(buffer[start..<end]) + " (then end of output)")
            }
        }
        let header = buffer[start..<newline!]
        guard let (kind, length) = Frame.parseHeader(header) else {
            throw .garbage(Frame.quote(buffer[start..<min(end, start + 48)]))
        }
        guard length <= maxLength(kind) else { throw .tooLarge(kind: kind, length: length) }
        start = newline! + 1
        var payload = Data(capacity: length)
        while payload.count < length {
            if start == end {
                do {
                    try fill(from: fd, wait: wait)
                } catch .closed {
                    cutFrame = (kind, length, payload.count)
                    throw .closed
                }
            }
            let take = min(end - start, length - payload.count)
            buffer.withUnsafeBytes { payload.append($0.baseAddress!.advanced(by: start).assumingMemoryBound(to: UInt8.self), count: take) }
            start += take
        }
        return Frame(kind: kind, payload: payload)
    }

    /// Reads more bytes into the buffer.
    private mutating func fill(from fd: Int32, wait: (Int32) throws(FrameIOError) -> Void) throws(FrameIOError) {
        if start == end {
            start = 0
            end = 0
        } else if start > 0 {
            buffer.replaceSubrange(0..<(end - start), with: buffer[start..<end])
            end -= start
            start = 0
        }
        try wait(fd)
        while true {
            let got = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress!.advanced(by: end), $0.count - end) }
            if got > 0 {
                end += got
                return
            }
            if got == 0 { throw .closed }
            if errno == EINTR || errno == EAGAIN { continue }
            if errno == ECONNRESET { throw .closed }
            throw .system("read: \(String(cString: strerror(errno)))")
        }
    }
}

/// Writes frames with blocking system calls.
public enum FrameWriter {
    /// Writes all of `frame` to `fd`.
    ///
    /// - Parameters:
    ///   - wait: called before each `write`, to wait until `fd` is writable.
    ///   - isSocket: `fd` is a socket: write with `MSG_NOSIGNAL`, so a vanished peer is an error,
    ///     not a SIGPIPE.
    ///   - brokenPipe: called when the peer is gone (`EPIPE`), before throwing `.closed`; for
    ///     example to consume the SIGPIPE a thread blocked.
    public static func write(
        _ frame: Data, to fd: Int32, isSocket: Bool = false, wait: (Int32) throws(FrameIOError) -> Void = { _ in },
        brokenPipe: () -> Void = {}
    ) throws(FrameIOError) {
        var sent = 0
        while sent < frame.count {
            try wait(fd)
            let wrote = frame.withUnsafeBytes { systemWrite(fd, $0.baseAddress!.advanced(by: sent), frame.count - sent, isSocket) }
            if wrote >= 0 {
                sent += wrote
                continue
            }
            if errno == EINTR || errno == EAGAIN { continue }
            if errno == EPIPE || errno == ECONNRESET {
                brokenPipe()
                throw .closed
            }
            throw .system("write: \(String(cString: strerror(errno)))")
        }
    }

    private static func systemWrite(_ fd: Int32, _ bytes: UnsafeRawPointer, _ count: Int, _ isSocket: Bool) -> Int {
        #if canImport(Glibc)
        isSocket ? send(fd, bytes, count, Int32(MSG_NOSIGNAL)) : Glibc.write(fd, bytes, count)
        #else
        Darwin.write(fd, bytes, count)
        #endif
    }
}
