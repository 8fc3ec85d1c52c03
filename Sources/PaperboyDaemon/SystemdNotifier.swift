#if canImport(Glibc)
import Glibc
#endif
import Foundation
import PaperboyWire

/// Tells systemd about the daemon's state (`sd_notify(3)`) without libsystemd: one datagram to
/// the Unix socket named by `NOTIFY_SOCKET` (an abstract socket when it starts with `@`).
public enum SystemdNotifier {
    /// Sends `state` (such as `READY=1`); returns whether it was sent. Without `NOTIFY_SOCKET`
    /// (not started by systemd) it does nothing.
    @discardableResult
    public static func notify(_ state: String, environment: [String: String] = ProcessInfo.processInfo.environment) -> Bool {
        guard let name = environment["NOTIFY_SOCKET"], !name.isEmpty else { return false }
        var bytes = Array(name.utf8)
        guard bytes.count <= DaemonSocket.maxPathLength else { return false }
        if bytes[0] == UInt8(ascii: "@") { bytes[0] = 0 }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            for (index, byte) in bytes.enumerated() { buffer[index] = byte }
        }
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count)
        let message = Array(state.utf8)
        let sent = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                message.withUnsafeBytes { sendto(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL), address, length) }
            }
        }
        return sent == message.count
    }
}
