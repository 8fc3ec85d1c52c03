#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Paperboy

/// A folder of this user's that no other user can change, held by its descriptor: the one
/// place the daemon's socket folder, the runtime folder above it and the library folder holding
/// `daemon.json` and `daemon-claims.json` are opened, by the daemon, the client and the CLI.
///
/// Another user can plant a link (or a folder of theirs) only in a folder they can write: a
/// shared `XDG_RUNTIME_DIR` (mode 1777 in many containers), `/tmp`. So the folder and the one
/// holding it (the runtime folder) are each opened relative to their parent's descriptor with
/// `O_NOFOLLOW`, and:
///
/// 1. a link is followed only in a folder nobody else can write, and only if it belongs to this
///    user or root (who alone could have made it there);
/// 2. the runtime folder belongs to this user or root, and if others can write it, it is sticky
///    (1777: nobody else can rename or remove what is ours in it);
/// 3. the folder itself belongs to this user; with `repairing`, it is made 0700 through its
///    descriptor (never a path that could have changed meanwhile), otherwise one others may
///    write is refused.
///
/// The folders above the runtime folder are the configuration's choice and are followed.
/// Files in the folder are opened relative to its descriptor with `O_NOFOLLOW`
/// (``readFile(_:atMost:)``, ``replaceFile(_:with:)``), created private (0600) from their first byte.
package final class PrivateFolder: Sendable {
    /// Why a folder or a file of ours cannot be used.
    package struct Failure: Error, Sendable, Equatable {
        package enum Problem: Sendable, Equatable {
            /// It (or a folder on the way) does not exist.
            case missing
            /// A symbolic link where another user could have planted it, or one that belongs to another user.
            case link(owner: uid_t)
            /// It belongs to another user.
            case owner(uid_t)
            /// Others may write it (the permission bits).
            case openToOthers(mode: mode_t)
            case notAFolder
            case notAFile
            /// The system refused (its `strerror`).
            case system(String)
        }

        /// The path concerned.
        package var path: String
        package var problem: Problem

        /// A sentence naming the path and, for a link or a foreign owner, the owner.
        package var message: String {
            let me = getuid()
            switch problem {
            case .missing:
                return "\(path) does not exist"
            case .link(let owner):
                return "\(path) is a symbolic link (owned by uid \(owner)) where another user could have planted it: not followed"
            case .owner(let owner):
                return "\(path) belongs to uid \(owner), not to this user (\(me))"
            case .openToOthers(let mode):
                return String(format: "%@ has mode %03o: other users could replace what is in it", path, mode & 0o7777)
            case .notAFolder:
                return "\(path) is not a folder"
            case .notAFile:
                return "\(path) is not a regular file"
            case .system(let reason):
                return "cannot open \(path): \(reason)"
            }
        }
    }

    /// The folder's path, as given.
    package let path: String
    /// The open folder (`O_DIRECTORY`, close-on-exec); closed when this is released.
    package let fd: Int32

    private init(path: String, fd: Int32) {
        self.path = path
        self.fd = fd
    }

    deinit { close(fd) }

    /// Opens the folder at `url`, checking it and the folder holding it as the type's rules say.
    ///
    /// - Parameters:
    ///   - creating: create the folder (mode 0700) and the runtime folder if missing (and the
    ///     folders above, 0700, as `mkdir -p` would).
    ///   - repairing: make the folder 0700 (instead of refusing one that others may write).
    /// - Throws: ``Failure`` naming the path and the problem.
    package static func open(_ url: URL, creating: Bool = false, repairing: Bool = false) throws(Failure) -> PrivateFolder {
        let path = url.standardizedFileURL.path
        let parentPath = (path as NSString).deletingLastPathComponent
        let grandparentPath = (parentPath as NSString).deletingLastPathComponent
        guard path != "/", parentPath != path else { throw Failure(path: path, problem: .notAFolder) }
        // The folders above the runtime folder are followed: the configuration named them.
        var grandparent = Glibc.open(grandparentPath, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if grandparent < 0, errno == ENOENT, creating {
            try makeFolders(grandparentPath)
            grandparent = Glibc.open(grandparentPath, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        }
        guard grandparent >= 0 else { throw Failure(path: grandparentPath, problem: errno == ENOENT ? .missing : .system(SystemFailure.reason())) }
        defer { close(grandparent) }
        let parent: Int32
        if parentPath == grandparentPath {
            parent = dup(grandparent)  // the folder is in "/"
        } else {
            parent = try step(into: grandparent, name: (parentPath as NSString).lastPathComponent, path: parentPath, creating: creating)
        }
        defer { close(parent) }
        var info = stat()
        guard fstat(parent, &info) == 0 else { throw Failure(path: parentPath, problem: .system(SystemFailure.reason())) }
        guard info.st_uid == getuid() || info.st_uid == 0 else { throw Failure(path: parentPath, problem: .owner(info.st_uid)) }
        if info.st_mode & 0o022 != 0, info.st_mode & S_ISVTX == 0 {
            throw Failure(path: parentPath, problem: .openToOthers(mode: info.st_mode))
        }
        let fd = try step(into: parent, name: (path as NSString).lastPathComponent, path: path, creating: creating)
        guard fstat(fd, &info) == 0 else {
            close(fd)
            throw Failure(path: path, problem: .system(SystemFailure.reason()))
        }
        guard info.st_uid == getuid() else {
            close(fd)
            throw Failure(path: path, problem: .owner(info.st_uid))
        }
        if repairing, info.st_mode & 0o777 != 0o700, fchmod(fd, 0o700) != 0 {
            close(fd)
            throw Failure(path: path, problem: .system("cannot make it private: \(SystemFailure.reason())"))
        }
        if !repairing, info.st_mode & 0o022 != 0 {
            close(fd)
            throw Failure(path: path, problem: .openToOthers(mode: info.st_mode))
        }
        return PrivateFolder(path: path, fd: fd)
    }

    /// Opens the folder `name` in `parent` (whose path is `path`'s parent): not through a link
    /// others could have planted (rule 1), created (0700) when missing and `creating`.
    private static func step(into parent: Int32, name: String, path: String, creating: Bool) throws(Failure) -> Int32 {
        let flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC
        var fd = openat(parent, name, flags | O_NOFOLLOW)
        if fd < 0, errno == ENOENT, creating {
            if mkdirat(parent, name, 0o700) != 0, errno != EEXIST { throw Failure(path: path, problem: .system(SystemFailure.reason())) }
            fd = openat(parent, name, flags | O_NOFOLLOW)
        }
        if fd >= 0 { return fd }
        let code = errno
        var link = stat()
        guard fstatat(parent, name, &link, AT_SYMLINK_NOFOLLOW) == 0 else {
            throw Failure(path: path, problem: code == ENOENT ? .missing : .system(SystemFailure.reason(code)))
        }
        guard link.st_mode & S_IFMT == S_IFLNK else {
            throw Failure(path: path, problem: link.st_mode & S_IFMT == S_IFDIR ? .system(SystemFailure.reason(code)) : .notAFolder)
        }
        var holder = stat()
        guard fstat(parent, &holder) == 0 else { throw Failure(path: path, problem: .system(SystemFailure.reason())) }
        let sharedHolder = holder.st_mode & 0o022 != 0 || (holder.st_uid != getuid() && holder.st_uid != 0)
        guard !sharedHolder, link.st_uid == getuid() || link.st_uid == 0 else {
            throw Failure(path: path, problem: .link(owner: link.st_uid))
        }
        fd = openat(parent, name, flags)
        guard fd >= 0 else { throw Failure(path: path, problem: errno == ENOENT ? .missing : .system(SystemFailure.reason())) }
        return fd
    }

    /// `mkdir -p` with mode 0700 for the folders above the runtime folder.
    private static func makeFolders(_ path: String) throws(Failure) {
        if mkdir(path, 0o700) == 0 || errno == EEXIST { return }
        guard errno == ENOENT else { throw Failure(path: path, problem: .system(SystemFailure.reason())) }
        let parent = (path as NSString).deletingLastPathComponent
        guard !parent.isEmpty, parent != path else { throw Failure(path: path, problem: .missing) }
        try makeFolders(parent)
        guard mkdir(path, 0o700) == 0 || errno == EEXIST else { throw Failure(path: path, problem: .system(SystemFailure.reason())) }
    }

    // MARK: What is in it

    /// The path of `name` in this folder.
    package func path(of name: String) -> String { (path as NSString).appendingPathComponent(name) }

    /// What is at `name` in this folder, without following a link; `nil` when nothing is.
    package func entry(_ name: String) -> stat? {
        var info = stat()
        return fstatat(fd, name, &info, AT_SYMLINK_NOFOLLOW) == 0 ? info : nil
    }

    /// Removes `name` (not a folder) from this folder, a link itself rather than what it leads to.
    package func remove(_ name: String) {
        unlinkat(fd, name, 0)
    }

    /// The content of the regular file `name`, this user's, opened without following a link;
    /// `nil` when there is no such file. At most `limit` bytes and one more are read (enough for
    /// a bounded reader to refuse a bigger file).
    ///
    /// - Throws: ``Failure`` for a link, another user's file or something that is not a file.
    package func readFile(_ name: String, atMost limit: Int = .max) throws(Failure) -> Data? {
        let file = openat(fd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard file >= 0 else {
            let code = errno
            if code == ENOENT { return nil }
            if code == ELOOP, let info = entry(name) { throw Failure(path: path(of: name), problem: .link(owner: info.st_uid)) }
            throw Failure(path: path(of: name), problem: .system(SystemFailure.reason(code)))
        }
        defer { close(file) }
        var info = stat()
        guard fstat(file, &info) == 0 else { throw Failure(path: path(of: name), problem: .system(SystemFailure.reason())) }
        guard info.st_mode & S_IFMT == S_IFREG else { throw Failure(path: path(of: name), problem: .notAFile) }
        guard info.st_uid == getuid() else { throw Failure(path: path(of: name), problem: .owner(info.st_uid)) }
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 16_384)
        while true {
            let count = buffer.withUnsafeMutableBytes { Glibc.read(file, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count >= 0 else { throw Failure(path: path(of: name), problem: .system(SystemFailure.reason())) }
            if count == 0 { return data }
            data.append(contentsOf: buffer[..<count])
            // One byte past the limit is enough for the reader to refuse the file as too large.
            if data.count > limit { return data }
        }
    }

    /// Replaces the file `name` with `data`, relative to this folder's descriptor, private to the
    /// user (0600) and durably: ``AtomicFile/write(_:named:inFolder:folderPath:mode:durable:)``
    /// (a link at `name` is replaced, never followed).
    ///
    /// - Throws: ``LibraryError`` naming the file and the system's reason.
    package func replaceFile(_ name: String, with data: Data) throws(LibraryError) {
        try AtomicFile.write(data, named: name, inFolder: fd, folderPath: path)
    }
}

extension PrivateFolder.Failure: CustomStringConvertible {
    package var description: String { message }
}
