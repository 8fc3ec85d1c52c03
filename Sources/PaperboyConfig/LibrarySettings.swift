import Foundation
import Paperboy

/// The `[library]` section: where the library lives and how it runs.
public struct LibrarySettings: Sendable, Equatable {
    /// How the library behaves towards networks and the user.
    public enum Mode: String, Sendable, CaseIterable {
        /// An app or operator is waiting: any allowed network, including metered ones.
        case foreground
        /// Nobody is waiting: by default, unmetered networks only.
        case background
    }

    /// The library's root folder (`path`).
    public var path: URL
    /// The library's mode (`mode`), `foreground` by default.
    public var mode: Mode
    /// Whether downloaded bytes are synced to disk at checkpoints and before delivery
    /// (`sync_to_disk`), `true` by default: a power loss then loses nothing recorded. With
    /// `false`, a process crash (kill -9) still loses nothing, a power loss may.
    public var syncToDisk: Bool = true
    /// The most bytes one archive (`unpack = "zip"`) may unpack to, its declared sizes summed
    /// (`max_unpacked_size`), 20 GiB by default.
    public var maxUnpackedSize: Int64 = 20 << 30
    /// The most an archive may unpack to as a multiple of its own size (`max_unpack_ratio`),
    /// 200 by default; archives unpacking to at most 1 MiB are not checked.
    public var maxUnpackRatio: Int = 200
    /// The free space downloads and unpacking leave on the library's file system
    /// (`min_free_space`: a size, or a percentage of the file system), by default 256 MiB or
    /// 1 % of the file system, whichever is larger.
    public var minFreeSpace: FreeSpaceFloor = .default

    /// Creates library settings.
    public init(path: URL, mode: Mode = .foreground) {
        self.path = path
        self.mode = mode
    }

    /// `$XDG_DATA_HOME/paperboy`, or `~/.local/share/paperboy` when it is unset or relative.
    public static func defaultPath(environment: [String: String]) -> URL {
        if let data = environment["XDG_DATA_HOME"], data.hasPrefix("/") {
            return URL(fileURLWithPath: data, isDirectory: true).appendingPathComponent("paperboy", isDirectory: true)
        }
        let home = PathResolution.homeDirectory(environment: environment)
        return URL(fileURLWithPath: home, isDirectory: true)
            .appendingPathComponent(".local/share/paperboy", isDirectory: true)
    }
}
