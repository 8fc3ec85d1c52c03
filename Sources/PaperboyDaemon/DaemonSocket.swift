#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Paperboy

/// The daemon's listening Unix socket: private to its user, in a private folder.
///
/// The folder is created with mode 0700 (an existing one must belong to the daemon's user and
/// is set to 0700), the socket with mode 0600. A socket file left by a daemon that died is
/// replaced; one that still answers is refused, so two daemons never share a path.
public enum DaemonSocket {
    /// The longest path a Unix socket can have (`sun_path`, terminating zero excluded).
    public static let maxPathLength = 107

    /// Binds and listens on `url`; returns the listening descriptor (close-on-exec).
    ///
    /// - Throws: ``LibraryError`` `.storage` naming the path and the reason.
    public static func listen(at url: URL) throws(LibraryError) -> Int32 {
        let path = url.path
        let folder = url.deletingLastPathComponent().path
        try makePrivateFolder(folder)
        if access(path, F_OK) == 0 {
            let probe = try connect(to: url)
            if probe >= 0 {
                close(probe)
                throw LibraryError(.storage, "a daemon already serves \(path)")
            }
            unlink(path)
        }
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw LibraryError(.storage, "cannot create the socket \(path): \(systemError())") }
        var address = try address(for: path)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard bound == 0, chmod(path, 0o600) == 0, Glibc.listen(fd, 64) == 0 else {
            let message = systemError()
            close(fd)
            throw LibraryError(.storage, "cannot listen on \(path): \(message)")
        }
        return fd
    }

    /// Connects to the socket at `url`: a descriptor, or -1 when nothing listens there.
    ///
    /// - Throws: ``LibraryError`` `.storage` for a path too long for a Unix socket.
    public static func connect(to url: URL) throws(LibraryError) -> Int32 {
        var address = try address(for: url.path)
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return -1 }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        if connected != 0 {
            close(fd)
            return -1
        }
        return fd
    }

    /// The uid of the process at the other end of a connected Unix socket (`SO_PEERCRED`).
    public static func peerUID(_ fd: Int32) -> uid_t? {
        // struct ucred { pid_t pid; uid_t uid; gid_t gid; } (Glibc shows it only with _GNU_SOURCE).
        var credentials: [UInt32] = [0, 0, 0]
        var length = socklen_t(12)
        let got = credentials.withUnsafeMutableBytes { getsockopt(fd, SOL_SOCKET, SO_PEERCRED, $0.baseAddress, &length) }
        guard got == 0, length == 12 else { return nil }
        return uid_t(credentials[1])
    }

    /// Whether a connection from `peer` may talk to a daemon running as `daemon`: only the
    /// same user (root included: root does not get another user's daemon).
    public static func admits(peer: uid_t?, daemon: uid_t) -> Bool {
        guard let peer else { return false }
        return peer == daemon
    }

    /// Creates `folder` (and missing parents) with mode 0700, or makes an existing one 0700.
    static func makePrivateFolder(_ folder: String) throws(LibraryError) {
        var info = stat()
        if stat(folder, &info) != 0 {
            let parent = (folder as NSString).deletingLastPathComponent
            if !parent.isEmpty, parent != folder, stat(parent, &info) != 0 { try makePrivateFolder(parent) }
            guard mkdir(folder, 0o700) == 0 || errno == EEXIST else {
                throw LibraryError(.storage, "cannot create the socket folder \(folder): \(systemError())")
            }
            guard stat(folder, &info) == 0 else {
                throw LibraryError(.storage, "cannot read the socket folder \(folder): \(systemError())")
            }
        }
        guard (info.st_mode & S_IFMT) == S_IFDIR else {
            throw LibraryError(.storage, "the socket folder \(folder) is not a folder")
        }
        guard info.st_uid == getuid() else {
            throw LibraryError(.storage, "the socket folder \(folder) belongs to uid \(info.st_uid), not to this user (\(getuid()))")
        }
        if info.st_mode & 0o777 != 0o700, chmod(folder, 0o700) != 0 {
            throw LibraryError(.storage, "cannot make the socket folder \(folder) private: \(systemError())")
        }
    }

    private static func address(for path: String) throws(LibraryError) -> sockaddr_un {
        let bytes = Array(path.utf8)
        guard !bytes.isEmpty, bytes.count <= maxPathLength else {
            throw LibraryError(.storage, "the socket path \(path) is \(bytes.count) bytes long; a Unix socket path has at most \(maxPathLength)")
        }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            for (index, byte) in bytes.enumerated() { buffer[index] = byte }
        }
        return address
    }
}

/// The text of the current `errno`.
func systemError() -> String { String(cString: strerror(errno)) }
