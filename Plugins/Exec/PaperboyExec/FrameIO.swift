#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CPaperboySystem
import Foundation
import Paperboy
import PaperboyFraming

/// Why reading from or writing to a helper failed.
typealias HelperIOError = FrameIOError

/// The helper side of the shared frame reader: bounded waits, on the transport's clock, that
/// notice an abandoned transfer.
extension FrameReader {
    /// The next frame from a helper's stdout (`DATA` up to ``ExecProtocol/maxDataLength``, other
    /// kinds up to ``ExecProtocol/maxControlLength``).
    ///
    /// - Parameters:
    ///   - idleTimeout: how long to wait, on `clock`, for each read to bring bytes.
    ///   - abandoned: checked at least every 100 ms; when it returns `true`, the read gives up.
    mutating func next(from fd: Int32, idleTimeout: Duration, clock: any LibraryClock,
                       abandoned: () -> Bool) throws(HelperIOError) -> Frame {
        try next(from: fd, maxLength: ExecProtocol.maxLength(of:)) { fd throws(HelperIOError) in
            try FrameWait.untilReady(fd, events: Int16(POLLIN), timeout: idleTimeout, sleep: { try await clock.sleep(for: $0) }, abandoned: abandoned)
        }
    }

    /// Up to 48 bytes, printable ASCII kept and the rest escaped, for error messages.
    static func quote(_ bytes: ArraySlice<UInt8>) -> String { Frame.quote(bytes) }
}

/// Writes frames to a helper's stdin (run it on a dedicated thread that blocks SIGPIPE).
extension FrameWriter {
    static func write(_ frame: Data, to fd: Int32, timeout: Duration, clock: any LibraryClock,
                      abandoned: () -> Bool) throws(HelperIOError) {
        try write(frame, to: fd, wait: { fd throws(HelperIOError) in
            try FrameWait.untilReady(fd, events: Int16(POLLOUT), timeout: timeout, sleep: { try await clock.sleep(for: $0) }, abandoned: abandoned)
        }, brokenPipe: { paperboy_clear_sigpipe() })
    }
}
