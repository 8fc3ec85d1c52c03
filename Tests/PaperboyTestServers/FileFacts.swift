#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// What a test asserts about a file: its permission bits, the names beside it.
public enum FileFacts {
    /// The permission bits of what is at `url` (not following a link), or nil if nothing is.
    public static func mode(_ url: URL) -> mode_t? {
        var info = stat()
        return lstat(url.path, &info) == 0 ? info.st_mode & 0o7777 : nil
    }

    /// The names in `folder`, sorted (none if it cannot be read).
    public static func names(in folder: URL) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []).sorted()
    }
}
