#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

/// Which boot of the machine this process runs in.
///
/// A process that dies (kill -9, a crash) loses no byte that `write(2)` accepted: the kernel
/// still holds it and writes it out. Only a kernel crash or a power loss can lose such bytes,
/// and both start a new boot with a new identifier. So a partial file written in order is
/// trusted to its full length when the library reopens in the boot that recorded its last
/// checkpoint, and only to the checkpoint (made durable with `fdatasync`) after a reboot.
enum BootIdentity {
    /// The environment variable that replaces the system's boot identifier (tests simulate a
    /// reboot with it).
    static let environmentKey = "PAPERBOY_BOOT_ID"

    /// The current boot's identifier: `PAPERBOY_BOOT_ID` when set, else the kernel's
    /// (`/proc/sys/kernel/random/boot_id` on Linux, `kern.bootsessionuuid` on Darwin), or `nil`
    /// when none can be read (bytes past a checkpoint are then never trusted).
    static func current(environment: [String: String] = ProcessInfo.processInfo.environment) -> String? {
        if let forced = environment[environmentKey] { return normalized(forced) }
        #if os(Linux)
        guard let text = try? String(contentsOfFile: "/proc/sys/kernel/random/boot_id", encoding: .utf8) else { return nil }
        return normalized(text)
        #elseif canImport(Darwin)
        var size = 0
        guard sysctlbyname("kern.bootsessionuuid", nil, &size, nil, 0) == 0, size > 0 else { return nil }
        var bytes = [CChar](repeating: 0, count: size)
        guard sysctlbyname("kern.bootsessionuuid", &bytes, &size, nil, 0) == 0 else { return nil }
        return normalized(String(cString: bytes))
        #else
        return nil
        #endif
    }

    /// Trimmed; `nil` when empty or longer than an identifier can be.
    private static func normalized(_ text: String) -> String? {
        let value = text.trimmingCharacters(in: .whitespacesAndNewlines)
        return value.isEmpty || value.utf8.count > 128 ? nil : value
    }
}
