#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Paperboy

/// The daemon's listening Unix socket: private to its user, in a private folder.
///
/// The folder is a ``PrivateFolder``: created with mode 0700 (an existing one must belong to the
/// daemon's user and is set to 0700), never reached through a link another user could have
/// planted; the socket has mode 0600. A socket file left by a daemon that died is
/// replaced; one that still answers is refused, so two daemons never share a path.
public enum DaemonSocket {
    /// The longest path a Unix socket can have (`sun_path`, terminating zero excluded).
    public static let maxPathLength = 107

    /// Binds and listens on `url`; returns the listening descriptor (close-on-exec).
    ///
    /// The folder is opened as a ``PrivateFolder`` (created, made 0700); a stale socket in it is
    /// removed through its descriptor.
    ///
    /// - Throws: ``LibraryError`` `.storage` naming the path and the reason (for a planted link
    ///   or a folder of another user's, its owner).
    public static func listen(at url: URL) throws(LibraryError) -> Int32 {
        let path = url.path
        let name = url.lastPathComponent
        let folder: PrivateFolder
        do {
            folder = try PrivateFolder.open(url.deletingLastPathComponent(), creating: true, repairing: true)
        } catch {
            throw LibraryError(.storage, "cannot use the socket folder: \(error.message)")
        }
        if folder.entry(name) != nil {
            let probe = try connect(to: url)
            if probe >= 0 {
                close(probe)
                throw LibraryError(.storage, "a daemon already serves \(path)")
            }
            folder.remove(name)
        }
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw LibraryError(.storage, SystemFailure.message("cannot create the socket", path)) }
        // Bound by its path (what `getsockname` and tools show): the folder, checked and held
        // open, is this user's and 0700, in a runtime folder where nobody else can replace it.
        var address = try address(for: path)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard bound == 0, fchmodat(folder.fd, name, 0o600, 0) == 0, Glibc.listen(fd, 64) == 0 else {
            let message = SystemFailure.reason()
            close(fd)
            throw LibraryError(.storage, "cannot listen on \(path): \(message)")
        }
        return fd
    }

    /// What is at a socket's path, for a client about to connect.
    public enum Trust: Equatable, Sendable {
        /// No socket there (nor its folder): nothing to connect to.
        case absent
        /// This user's socket, closed to others, in a folder only this user can change.
        case trusted
        /// Something is there that must not be trusted; why.
        case refused(String)
    }

    /// Whether the socket at `url` and its folder may be trusted: the folder a ``PrivateFolder``
    /// (not repaired: a client changes nothing), the socket this user's, mode 0600 or stricter,
    /// found without following a link. Every client door asks this before connecting.
    public static func trust(_ url: URL) -> Trust {
        let folder: PrivateFolder
        do {
            folder = try PrivateFolder.open(url.deletingLastPathComponent())
        } catch {
            switch error.problem {
            case .missing:
                return .absent
            case .openToOthers(let mode) where error.path == url.deletingLastPathComponent().standardizedFileURL.path:
                return .refused(String(format: "its folder %@ has mode %03o: others could replace the socket (the daemon makes it 0700)",
                                       error.path, mode & 0o777))
            default:
                return .refused(error.message)
            }
        }
        guard let info = folder.entry(url.lastPathComponent) else {
            return errno == ENOENT ? .absent : .refused("cannot read it: \(SystemFailure.reason())")
        }
        let me = getuid()
        if info.st_mode & S_IFMT == S_IFLNK { return .refused("it is a symbolic link (owned by uid \(info.st_uid)): not followed") }
        guard info.st_mode & S_IFMT == S_IFSOCK else { return .refused("it is not a socket") }
        guard info.st_uid == me else { return .refused("it belongs to uid \(info.st_uid), not to this user (\(me))") }
        guard info.st_mode & 0o077 == 0 else {
            return .refused(String(format: "its mode is %03o; a daemon's socket is 0600 (nobody else may connect)", info.st_mode & 0o777))
        }
        return .trusted
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
