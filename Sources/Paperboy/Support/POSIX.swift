#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import CPaperboySystem
import Foundation

/// Small wrappers over the system calls the core needs, with errors that name the file.
enum POSIX {
    /// Opens (creating if needed, mode 0600) a file for reading and writing; emptied first when
    /// `truncating`.
    static func openReadWrite(_ url: URL, truncating: Bool = false) throws(LibraryError) -> Int32 {
        let fd = open(url.path, O_RDWR | O_CREAT | O_CLOEXEC | (truncating ? O_TRUNC : 0), 0o600)
        if fd < 0 {
            throw LibraryError(.storage, SystemFailure.message("cannot open", url.path), isRetryable: false)
        }
        return fd
    }

    /// Fills `buffer` (at most 256 bytes) from the kernel's random source in one `getrandom`
    /// call; `false` if it could not.
    static func randomBytes(_ buffer: UnsafeMutableRawBufferPointer) -> Bool {
        buffer.count <= 256 && paperboy_random_bytes(buffer.baseAddress, UInt(buffer.count)) == 0
    }

    /// Bytes an unprivileged user may still write on the file system holding `path`, and the
    /// file system's size; nil if it does not say (some FUSE and network file systems report a
    /// size of 0).
    static func fileSystemSpace(_ path: String) -> (available: Int64, size: Int64)? {
        var info = statvfs()
        guard statvfs(path, &info) == 0, info.f_blocks > 0 else { return nil }
        let unit = UInt64(info.f_frsize)
        let (available, overflow) = UInt64(info.f_bavail).multipliedReportingOverflow(by: unit)
        let (size, sizeOverflow) = UInt64(info.f_blocks).multipliedReportingOverflow(by: unit)
        return (overflow ? .max : Int64(clamping: available), sizeOverflow ? .max : Int64(clamping: size))
    }

    static func fileSize(_ fd: Int32) -> Int64 {
        var info = stat()
        return fstat(fd, &info) == 0 ? Int64(info.st_size) : 0
    }

    /// Cuts the file at `length` and places the next `write` at `position` (`length` when nil).
    static func truncate(_ fd: Int32, to length: Int64, position: Int64? = nil) -> Bool {
        ftruncate(fd, off_t(length)) == 0 && lseek(fd, off_t(position ?? length), SEEK_SET) >= 0
    }

    /// Writes the whole buffer, retrying on EINTR and short writes. With `offset`, writes there
    /// (`pwrite`) without moving the file's position.
    static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, at offset: Int64? = nil) -> Int32? {
        guard var pointer = bytes.baseAddress else { return nil }
        var remaining = bytes.count
        while remaining > 0 {
            let written = if let offset {
                pwrite(fd, pointer, remaining, off_t(offset + Int64(bytes.count - remaining)))
            } else {
                write(fd, pointer, remaining)
            }
            if written < 0 {
                if errno == EINTR { continue }
                return errno
            }
            pointer += written
            remaining -= written
        }
        return nil
    }

    /// Reads into `buffer` until it is full or the file ends, retrying on EINTR and short
    /// reads: the count read (less than the buffer's only at the end), or the `errno` of a failure.
    /// With `offset`, reads from there (`pread`) without moving the file's position.
    static func readFully(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, at offset: Int64? = nil) -> Result<Int, SystemError> {
        var filled = 0
        while filled < buffer.count {
            let count = if let offset {
                pread(fd, buffer.baseAddress! + filled, buffer.count - filled, off_t(offset + Int64(filled)))
            } else {
                read(fd, buffer.baseAddress! + filled, buffer.count - filled)
            }
            if count < 0 {
                if errno == EINTR { continue }
                return .failure(SystemError(code: errno))
            }
            if count == 0 { break }
            filled += count
        }
        return .success(filled)
    }

    /// A system call's `errno`, as an error.
    struct SystemError: Error {
        var code: Int32
    }

    static func dataSync(_ fd: Int32) {
        #if canImport(Darwin)
        _ = fsync(fd)
        #else
        _ = fdatasync(fd)
        #endif
    }

    static func fileSystemSync(_ fd: Int32) {
        _ = paperboy_syncfs(fd)
    }

    static func closeFile(_ fd: Int32) {
        _ = close(fd)
    }

    static func rename(_ from: URL, _ to: URL) throws(LibraryError) {
        if Foundation.rename(from.path, to.path) != 0 {
            throw LibraryError(.storage, "cannot move \(from.path) to \(to.path): \(SystemFailure.reason())", isRetryable: false)
        }
    }

    static func exists(_ url: URL) -> Bool {
        access(url.path, F_OK) == 0
    }

    /// Whether `url` names a folder (following symbolic links).
    static func isDirectory(_ url: URL) -> Bool {
        isDirectory(path: url.path)
    }

    static func isDirectory(path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFDIR
    }

    /// Whether `url` names a folder itself, not a symbolic link to one.
    static func isRealDirectory(_ url: URL) -> Bool {
        var info = stat()
        return lstat(url.path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFDIR
    }

    /// The link count of the folder `url` itself (not of what a link leads to); `nil` when it
    /// is not a real folder.
    static func realDirectoryLinkCount(_ url: URL) -> Int? {
        var info = stat()
        guard lstat(url.path, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR else { return nil }
        return Int(info.st_nlink)
    }

    /// Whether the folder `url`, whose link count is `links`, surely holds no folder: on the
    /// file systems whose folder link count is 2 plus one per subfolder (ext2/3/4, XFS, tmpfs),
    /// a count of 2. Elsewhere (Btrfs counts 1; network and FUSE file systems may report
    /// anything) the count says nothing, and the answer is `false`.
    static func holdsNoFolder(_ url: URL, links: Int) -> Bool {
        guard links == 2 else { return false }
        // EXT2/3/4_SUPER_MAGIC, XFS_SUPER_MAGIC, TMPFS_MAGIC (linux/magic.h); -1 elsewhere.
        return [0xEF53, 0x5846_5342, 0x0102_1994].contains(paperboy_file_system_type(url.path))
    }

    static func remove(_ url: URL) {
        unlink(url.path)
    }

    /// Removes `url` if it is a regular file of zero bytes.
    static func removeIfEmpty(_ url: URL) {
        if regularFileSize(url) == 0 { unlink(url.path) }
    }

    /// The size of the regular file at `url` (not following a link), or `nil` if there is none.
    static func regularFileSize(_ url: URL) -> Int64? {
        var info = stat()
        guard lstat(url.path, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { return nil }
        return Int64(info.st_size)
    }

    /// Creates a folder and its missing parents, each new one private to the user (mode 0700);
    /// a folder already there is fine.
    ///
    /// - Throws: ``LibraryError`` `.storage` naming the folder and the system's reason
    ///   ("Permission denied", "Not a directory").
    static func makeDirectory(_ url: URL) throws(LibraryError) {
        let path = url.path
        if let failure = makeDirectory(path: path) {
            throw LibraryError(.storage, SystemFailure.message("cannot create folder", path, code: failure))
        }
    }

    /// `makeDirectory` on a path: the `errno` of the failure, or nil.
    private static func makeDirectory(path: String) -> Int32? {
        if mkdir(path, 0o700) == 0 { return nil }
        var code = errno
        if code == ENOENT {
            // A parent is missing: create it, then this folder.
            let parent = (path as NSString).deletingLastPathComponent
            guard !parent.isEmpty, parent != path else { return code }
            if let failure = makeDirectory(path: parent) { return failure }
            if mkdir(path, 0o700) == 0 { return nil }
            code = errno
        }
        if code == EEXIST { return isDirectory(path: path) ? nil : ENOTDIR }
        return code
    }

    static func realPath(_ url: URL) -> String? {
        guard let resolved = realpath(url.path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }
}
