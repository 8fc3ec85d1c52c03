import Foundation

/// How much of its file system a library leaves free (`[library] min_free_space`): the larger
/// of ``bytes`` and ``percent`` of the file system's size.
///
/// A library stops writing downloads and unpacked archives before the free space drops below
/// the floor, so that its database can always record why. A disk filled to the last byte
/// refuses SQLite's writes too: the failure would be lost, the asset would show `downloading`
/// forever, and the partial file would keep the disk full.
///
/// The default, max(256 MiB, 1 %), is sized for what must still fit once a transfer is stopped:
/// - the database's writes: recording failures and progress takes kilobytes, but SQLite's
///   write-ahead log grows until its next checkpoint (megabytes), and a library of 100,000
///   assets is a database of about 50 MiB that a migration may need to copy;
/// - what the writers may write past the floor before they see it: each checks the free
///   space at least every 8 MiB written, so a few
///   concurrent transfers and an unpacking stay within tens of MiB;
/// - everything else on the machine that writes to the same file system (logs, package
///   updates, the shell the user frees space with): on a big disk these write proportionally
///   more, hence 1 %, 10 GB of a 1 TB disk, which is cheap there and keeps a system disk usable.
///
/// The space the file system reserves for root (ext4's 5 %) is not counted as free: the floor
/// comes on top of it.
public struct FreeSpaceFloor: Sendable, Hashable, CustomStringConvertible {
    /// Bytes that stay free at least.
    public var bytes: Int64
    /// The percentage of the file system's size that stays free at least (0 to 100).
    public var percent: Double

    /// A floor of the larger of `bytes` and `percent` % of the file system's size (values out
    /// of range are clamped: negative to 0, percentages above 100 to 100).
    public init(bytes: Int64 = 0, percent: Double = 0) {
        self.bytes = max(0, bytes)
        self.percent = percent.isNaN ? 0 : min(max(percent, 0), 100)
    }

    /// A floor of `count` bytes, whatever the file system's size.
    public static func bytes(_ count: Int64) -> FreeSpaceFloor { FreeSpaceFloor(bytes: count) }

    /// A floor of `value` % of the file system's size.
    public static func percent(_ value: Double) -> FreeSpaceFloor { FreeSpaceFloor(percent: value) }

    /// The default: 256 MiB or 1 % of the file system, whichever is larger (see above).
    public static let `default` = FreeSpaceFloor(bytes: 256 << 20, percent: 1)

    /// The bytes kept free on a file system of `size` bytes.
    public func bytes(onFileSystemOfSize size: Int64) -> Int64 {
        let share = Double(max(0, size)) * percent / 100
        return max(bytes, share >= 9.2e18 ? .max : Int64(share))
    }

    public var description: String {
        let fixed = "\(bytes) bytes"
        let share = "\(String(format: "%g", percent)) % of the file system"
        switch (bytes > 0, percent > 0) {
        case (true, true): return "the larger of \(fixed) and \(share)"
        case (false, true): return share
        default: return fixed
        }
    }
}
