#if canImport(Glibc)
import Glibc
#endif
import Foundation

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
            let reason = "cannot mount a tmpfs on \(url.path): \(String(cString: strerror(errno)))"
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

    /// Unmounts it (lazily, should a file still be open) and removes the folder.
    public func unmount() {
        _ = umount2(url.path, Int32(MNT_DETACH))
        try? FileManager.default.removeItem(at: parent)
    }
}
