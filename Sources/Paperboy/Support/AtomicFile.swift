#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import Synchronization

/// The one way the package replaces a file whole: a crash, a full disk or a power loss at any
/// instant leaves the old content or the new one, never a mix, and never a temporary file beside it
/// after a failure that the process saw.
///
/// 1. A temporary file is created in the file's own folder (a rename does not cross file systems),
///    `O_EXCL | O_NOFOLLOW`, with its final mode from its first byte: 0600 unless told otherwise,
///    whatever the umask, so that no other user can read a state file even for an instant.
/// 2. The content is written whole, then, when `durable`, the file is synced.
/// 3. It is renamed over the old file (a symbolic link there is replaced, never followed), and,
///    when `durable`, the folder is synced so that the rename survives a power loss.
///
/// A failure removes the temporary file and throws a ``LibraryError`` naming the file and the
/// system's reason (`.insufficientStorage` when the disk or a quota is full, else `.storage`).
package enum AtomicFile {
    /// The mode of the library's own files: private to the user.
    package static let privateMode: mode_t = 0o600

    private static let counter = Atomic<Int>(0)

    /// Replaces the file at `url` with `data`.
    ///
    /// - Parameters:
    ///   - mode: the file's permission bits (the umask does not apply).
    ///   - durable: sync the file and its folder before returning.
    /// - Throws: ``LibraryError`` naming the file (or its folder) and the reason.
    package static func write(_ data: Data, to url: URL, mode: mode_t = privateMode, durable: Bool = true) throws(LibraryError) {
        let folderPath = url.deletingLastPathComponent().path
        let folder = open(folderPath, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard folder >= 0 else { throw failure("cannot open folder", folderPath) }
        defer { close(folder) }
        try write(data, named: url.lastPathComponent, inFolder: folder, folderPath: folderPath, mode: mode, durable: durable)
    }

    /// Replaces the file `name` in the folder open as `folder` (whose path is `folderPath`, for
    /// messages) with `data`, relative to the descriptor: a folder reached through a checked
    /// descriptor stays the one checked.
    ///
    /// - Throws: ``LibraryError`` naming the file and the reason.
    package static func write(_ data: Data, named name: String, inFolder folder: Int32, folderPath: String,
                              mode: mode_t = privateMode, durable: Bool = true) throws(LibraryError) {
        let path = (folderPath as NSString).appendingPathComponent(name)
        // Unique in the process: two threads replacing the same file never share a temporary one.
        let temporary = ".\(name).tmp-\(getpid())-\(counter.add(1, ordering: .relaxed).newValue)"
        let file = openat(folder, temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode)
        guard file >= 0 else { throw failure("cannot create a temporary file for", path) }
        var code: Int32?
        if fchmod(file, mode) != 0 { code = errno }
        if code == nil {
            code = data.withUnsafeBytes { POSIX.writeAll(file, $0) }
        }
        if code == nil, durable, fsync(file) != 0 { code = errno }
        close(file)
        if code == nil, renameat(folder, temporary, folder, name) != 0 { code = errno }
        if let code {
            unlinkat(folder, temporary, 0)
            throw failure("cannot write", path, code: code)
        }
        // Some file systems cannot sync a folder (EINVAL); the file itself is durable by then.
        if durable { _ = fsync(folder) }
    }

    /// Replaces the file at `url` with one that `build` makes at the URL it is given: the
    /// temporary file `.<name>.new` in the same folder, created empty with `mode` (a leftover of
    /// an earlier try is replaced). For files another library writes by path (an SQLite database).
    ///
    /// - Throws: what `build` throws, or ``LibraryError`` naming the file and the reason; the
    ///   temporary file is removed either way.
    package static func replace(_ url: URL, mode: mode_t = privateMode, durable: Bool = true,
                                build: (URL) throws -> Void) throws {
        let temporary = url.deletingLastPathComponent().appendingPathComponent(".\(url.lastPathComponent).new")
        unlink(temporary.path)
        let created = open(temporary.path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode)
        guard created >= 0 else { throw failure("cannot create a temporary file for", url.path) }
        let madePrivate = fchmod(created, mode) == 0 ? nil : errno
        close(created)
        do {
            if let madePrivate { throw failure("cannot set the mode of", temporary.path, code: madePrivate) }
            try build(temporary)
            if durable {
                let file = open(temporary.path, O_RDONLY | O_CLOEXEC)
                guard file >= 0 else { throw failure("cannot open", temporary.path) }
                let synced = fsync(file) == 0 ? nil : errno
                close(file)
                if let synced { throw failure("cannot write", url.path, code: synced) }
            }
            guard rename(temporary.path, url.path) == 0 else { throw failure("cannot write", url.path) }
        } catch {
            unlink(temporary.path)
            throw error
        }
        if durable {
            let folder = open(url.deletingLastPathComponent().path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            if folder >= 0 {
                _ = fsync(folder)
                close(folder)
            }
        }
    }

    private static func failure(_ what: String, _ path: String, code: Int32 = errno) -> LibraryError {
        let full = code == ENOSPC || code == EDQUOT
        return LibraryError(full ? .insufficientStorage : .storage, SystemFailure.message(what, path, code: code))
    }
}
