#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CPaperboyExec
import Foundation

/// Reads frames from a helper's stdout with blocking system calls (run it on a dedicated thread).
///
/// It buffers at most 64 KiB beyond the frame being read, so back-pressure still reaches the
/// helper: nothing more is read until the next frame is asked for.
struct FrameReader {
    private var buffer = [UInt8](repeating: 0, count: 64 * 1024)
    private var start = 0
    private var end = 0

    /// The next frame.
    ///
    /// - Parameters:
    ///   - idleTimeout: how long to wait for each read to bring bytes.
    ///   - abandoned: checked at least every 100 ms; when it returns `true`, the read gives up.
    mutating func next(from fd: Int32, idleTimeout: Duration, abandoned: () -> Bool) throws(HelperIOError) -> Frame {
        var newline: Int?
        while newline == nil {
            newline = buffer[start..<end].firstIndex(of: UInt8(ascii: "\n"))
            if newline != nil { break }
            if end - start >= ExecProtocol.maxHeaderLength {
                throw .garbage(Self.quote(buffer[start..<end]))
            }
            do {
                try fill(from: fd, idleTimeout: idleTimeout, abandoned: abandoned)
            } catch .closed where end > start {
                throw .garbage(Self.quote(buffer[start..<end]) + " (then end of output)")
            }
        }
        let header = buffer[start..<newline!]
        guard let (kind, length) = ExecProtocol.parseHeader(header) else {
            throw .garbage(Self.quote(buffer[start..<min(end, start + 48)]))
        }
        let limit = kind == ExecProtocol.Kind.data ? ExecProtocol.maxDataLength : ExecProtocol.maxControlLength
        guard length <= limit else { throw .tooLarge(kind: kind, length: length) }
        start = newline! + 1
        var payload = Data(capacity: length)
        while payload.count < length {
            if start == end { try fill(from: fd, idleTimeout: idleTimeout, abandoned: abandoned) }
            let take = min(end - start, length - payload.count)
            buffer.withUnsafeBytes { payload.append($0.baseAddress!.advanced(by: start).assumingMemoryBound(to: UInt8.self), count: take) }
            start += take
        }
        return Frame(kind: kind, payload: payload)
    }

    /// Reads more bytes into the buffer, waiting at most `idleTimeout` for some to arrive.
    private mutating func fill(from fd: Int32, idleTimeout: Duration, abandoned: () -> Bool) throws(HelperIOError) {
        if start == end {
            start = 0
            end = 0
        } else if start > 0 {
            buffer.replaceSubrange(0..<(end - start), with: buffer[start..<end])
            end -= start
            start = 0
        }
        try Self.waitUntilReady(fd, events: Int16(POLLIN), idleTimeout: idleTimeout, abandoned: abandoned)
        while true {
            let got = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress!.advanced(by: end), $0.count - end) }
            if got > 0 {
                end += got
                return
            }
            if got == 0 { throw .closed }
            if errno == EINTR || errno == EAGAIN { continue }
            throw .system("read: \(String(cString: strerror(errno)))")
        }
    }

    /// Polls `fd` in slices of at most 100 ms, so that `abandoned` is noticed promptly.
    static func waitUntilReady(_ fd: Int32, events: Int16, idleTimeout: Duration, abandoned: () -> Bool) throws(HelperIOError) {
        let deadline = ContinuousClock.now + idleTimeout
        while true {
            if abandoned() { throw .abandoned }
            let remaining = deadline - ContinuousClock.now
            if remaining <= .zero { throw .timedOut(idleTimeout) }
            var descriptor = pollfd(fd: fd, events: events, revents: 0)
            let slice = Int32(max(1, min(100, remaining.milliseconds)))
            let ready = poll(&descriptor, 1, slice)
            if ready > 0 { return }
            if ready < 0, errno != EINTR { throw .system("poll: \(String(cString: strerror(errno)))") }
        }
    }

    /// Up to 48 bytes, printable ASCII kept and the rest escaped, for error messages.
    static func quote(_ bytes: ArraySlice<UInt8>) -> String {
        var text = ""
        for byte in bytes.prefix(48) {
            switch byte {
            case 0x20...0x7E where byte != UInt8(ascii: "\\"): text.append(Character(UnicodeScalar(byte)))
            case UInt8(ascii: "\n"): text += "\\n"
            default: text += String(format: "\\x%02x", byte)
            }
        }
        return "\"\(text)\(bytes.count > 48 ? "…" : "")\""
    }
}

/// Writes frames to a helper's stdin with blocking system calls (run it on a dedicated thread
/// that blocks SIGPIPE).
enum FrameWriter {
    static func write(_ frame: Data, to fd: Int32, timeout: Duration, abandoned: () -> Bool) throws(HelperIOError) {
        var sent = 0
        while sent < frame.count {
            try FrameReader.waitUntilReady(fd, events: Int16(POLLOUT), idleTimeout: timeout, abandoned: abandoned)
            let wrote = frame.withUnsafeBytes { Glibc.write(fd, $0.baseAddress!.advanced(by: sent), frame.count - sent) }
            if wrote >= 0 {
                sent += wrote
                continue
            }
            if errno == EINTR || errno == EAGAIN { continue }
            if errno == EPIPE {
                paperboy_exec_clear_sigpipe()
                throw .closed
            }
            throw .system("write: \(String(cString: strerror(errno)))")
        }
    }
}
