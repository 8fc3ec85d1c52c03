#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CPaperboySystem
import Foundation
import PaperboyFraming

/// Why reading from or writing to a helper failed.
typealias HelperIOError = FrameIOError

/// The helper side of the shared frame reader: bounded waits that notice an abandoned transfer.
extension FrameReader {
    /// The next frame from a helper's stdout (`DATA` up to ``ExecProtocol/maxDataLength``, other
    /// kinds up to ``ExecProtocol/maxControlLength``).
    ///
    /// - Parameters:
    ///   - idleTimeout: how long to wait for each read to bring bytes.
    ///   - abandoned: checked at least every 100 ms; when it returns `true`, the read gives up.
    mutating func next(from fd: Int32, idleTimeout: Duration, abandoned: () -> Bool) throws(HelperIOError) -> Frame {
        try next(from: fd, maxLength: ExecProtocol.maxLength(of:)) { fd throws(HelperIOError) in
            try Self.waitUntilReady(fd, events: Int16(POLLIN), idleTimeout: idleTimeout, abandoned: abandoned)
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
    static func quote(_ bytes: ArraySlice<UInt8>) -> String { Frame.quote(bytes) }
}

/// Writes frames to a helper's stdin (run it on a dedicated thread that blocks SIGPIPE).
extension FrameWriter {
    static func write(_ frame: Data, to fd: Int32, timeout: Duration, abandoned: () -> Bool) throws(HelperIOError) {
        try write(frame, to: fd, wait: { fd throws(HelperIOError) in
            try FrameReader.waitUntilReady(fd, events: Int16(POLLOUT), idleTimeout: timeout, abandoned: abandoned)
        }, brokenPipe: { paperboy_clear_sigpipe() })
    }
}
