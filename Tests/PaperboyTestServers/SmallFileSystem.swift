#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Paperboy

/// A tmpfs of a few MiB mounted on a fresh folder for one test: a disk that really fills, with
/// the library's database on it.
///
/// Mounting needs root (or `CAP_SYS_ADMIN`). Without it ``mount(megabytes:)`` returns nil and
/// the test skips, saying why; under `CI=true` it throws instead, so that a CI machine that
/// cannot run the test fails it rather than passes it.
public final class SmallFileSystem: Sendable {
    /// The mounted folder (mode 0700).
    public let url: URL
    private let parent: URL

    private init(url: URL, parent: URL) {
        self.url = url
        self.parent = parent
    }

    /// Mounts a tmpfs of `megabytes` MiB, or returns nil (skipping, outside CI) when it cannot.
    public static func mount(megabytes: Int) throws -> SmallFileSystem? {
        let parent = FileManager.default.temporaryDirectory.appendingPathComponent("paperboy-tmpfs-\(UUID().uuidString)")
        let url = parent.appendingPathComponent("disk")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        guard Glibc.mount("tmpfs", url.path, "tmpfs", 0, "size=\(megabytes)m,mode=0700") == 0 else {
            let reason = SystemFailure.message("cannot mount a tmpfs on", url.path)
            try? FileManager.default.removeItem(at: parent)
            if ProcessInfo.processInfo.environment["CI"] == "true" {
                throw ServerError("\(reason); CI must run the tests as root")
            }
            print("skipping the full-disk test: \(reason) (run as root)")
            return nil
        }
        return SmallFileSystem(url: url, parent: parent)
    }

    /// Bytes an unprivileged user may still write on it.
    public var availableBytes: Int64 {
        var info = statvfs()
        guard statvfs(url.path, &info) == 0 else { return 0 }
        return Int64(info.f_bavail) * Int64(info.f_frsize)
    }

    /// Fills it to the last byte with the file `name`: a write of anything more then fails with
    /// `ENOSPC`. Returns the bytes written.
    @discardableResult
    public func fill(name: String = "filler") throws -> Int64 {
        let path = url.appendingPathComponent(name).path
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw ServerError(SystemFailure.message("cannot create", path)) }
        defer { close(fd) }
        var total: Int64 = 0
        // Large writes first, then smaller ones down to a byte, so that no page keeps room.
        for size in [1 << 16, 1 << 12, 1] {
            let chunk = [UInt8](repeating: 0x5A, count: size)
            while true {
                let written = chunk.withUnsafeBytes { write(fd, $0.baseAddress, size) }
                if written > 0 {
                    total += Int64(written)
                    continue
                }
                if written < 0, errno == EINTR { continue }
                guard written < 0, errno == ENOSPC else {
                    throw ServerError(SystemFailure.message("cannot fill", path))
                }
                break
            }
        }
        return total
    }

    /// Unmounts it (lazily, should a file still be open) and removes the folder.
    public func unmount() {
        _ = umount2(url.path, Int32(MNT_DETACH))
        try? FileManager.default.removeItem(at: parent)
    }
}
