#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Paperboy
import PaperboyWire

extension DaemonSocket {
    /// The first descriptor systemd passes (`SD_LISTEN_FDS_START`).
    public static let activationDescriptor: Int32 = 3

    /// The listening socket systemd passed (socket activation), as `sd_listen_fds(3)` finds it:
    /// `LISTEN_PID` must be this process and `LISTEN_FDS` at least 1; descriptor 3 is used.
    ///
    /// `LISTEN_PID`, `LISTEN_FDS` and `LISTEN_FDNAMES` are removed from the environment either way
    /// (children must not take descriptors meant for this process), and the descriptor is made
    /// close-on-exec.
    ///
    /// - Returns: the descriptor, or `nil` when the variables do not name this process.
    /// - Throws: ``LibraryError`` `.storage` when they do but descriptor 3 is not a listening Unix
    ///   stream socket.
    public static func activatedListener() throws(LibraryError) -> Int32? {
        let environment = ProcessInfo.processInfo.environment
        for name in ["LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES"] { unsetenv(name) }
        guard let pid = environment["LISTEN_PID"].flatMap({ pid_t($0) }), pid == getpid(),
              let count = environment["LISTEN_FDS"].flatMap({ Int($0) }), count >= 1 else { return nil }
        let fd = activationDescriptor
        guard isListeningUnixStream(fd) else {
            throw LibraryError(.storage, "socket activation: descriptor \(fd) is not a listening Unix stream socket (LISTEN_FDS=\(count))")
        }
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        return fd
    }

    /// Whether `fd` is a Unix stream socket in the listening state.
    static func isListeningUnixStream(_ fd: Int32) -> Bool {
        func option(_ name: Int32) -> Int32? {
            var value: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            return getsockopt(fd, SOL_SOCKET, name, &value, &length) == 0 ? value : nil
        }
        return option(SO_DOMAIN) == AF_UNIX && option(SO_TYPE) == Int32(SOCK_STREAM.rawValue) && option(SO_ACCEPTCONN) == 1
    }

    /// The path a listening Unix socket is bound to, if it has one.
    public static func boundPath(_ fd: Int32) -> String? {
        var address = sockaddr_un()
        var length = socklen_t(MemoryLayout<sockaddr_un>.size)
        let got = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard got == 0, address.sun_family == sa_family_t(AF_UNIX) else { return nil }
        let path = withUnsafeBytes(of: address.sun_path) { bytes in
            String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
        }
        return path.isEmpty ? nil : path
    }
}
