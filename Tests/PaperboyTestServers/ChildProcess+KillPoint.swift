#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

extension ChildProcess {
    /// Starts `executable`, which writes one byte to its standard output at the point where a
    /// test kills it, and waits (on a thread of its own) for that byte, the child's end, or 60 s.
    ///
    /// - Parameters:
    ///   - killingAtTheByte: send SIGKILL as soon as the byte is read (microseconds after it,
    ///     whatever the cooperative pool does), or when no byte came; otherwise the caller kills.
    ///   - standardError: the descriptor the child's standard error goes to (its log).
    /// - Returns: the child and whether it wrote the byte.
    public static func startedUntilKillPoint(
        _ executable: String, _ arguments: [String], killingAtTheByte: Bool, standardError: Int32? = nil
    ) async throws -> (process: ChildProcess, reached: Bool) {
        var pipeFDs: [Int32] = [0, 0]
        guard pipe(&pipeFDs) == 0 else { throw ServerError("pipe: \(String(cString: strerror(errno)))") }
        for fd in pipeFDs { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        let process: ChildProcess
        do {
            defer { close(pipeFDs[1]) }
            process = try ChildProcess(executable, arguments, standardOutput: pipeFDs[1], standardError: standardError)
        } catch {
            close(pipeFDs[0])
            throw error
        }
        let readEnd = pipeFDs[0]
        defer { close(readEnd) }
        let reached = await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            Thread {
                var poller = pollfd(fd: readEnd, events: Int16(POLLIN), revents: 0)
                var byte: UInt8 = 0
                let reached = poll(&poller, 1, 60_000) == 1 && read(readEnd, &byte, 1) == 1
                if !reached || killingAtTheByte { process.signal(SIGKILL) }
                continuation.resume(returning: reached)
            }.start()
        }
        return (process, reached)
    }
}
