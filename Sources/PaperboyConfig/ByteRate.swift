import Foundation
import Paperboy

/// A transfer rate in bytes per second.
///
/// Written as a size (``ByteCount/init(size:door:)``: a number and a unit) with an optional
/// `/s`: `B`, `KB` (or `kB`), `MB`, `GB` are powers of 1000; `KiB`, `MiB`, `GiB` are powers
/// of 1024. A number without a unit is bytes per second. Units are bytes, never bits, and are
/// case-sensitive so that `Mb` is not silently read as megabytes. `off` means unlimited.
public struct ByteRate: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The rate in bytes per second, at least 1.
    public var bytesPerSecond: Int64

    /// Creates a rate from bytes per second.
    public init(bytesPerSecond: Int64) {
        self.bytesPerSecond = bytesPerSecond
    }

    /// The units accepted by ``parse(_:)`` and their size in bytes (``ByteCount/units``).
    public static let units: [(name: String, bytes: Int64)] = ByteCount.units

    /// Parses a rate such as `10MB/s`, `2MiB/s`, `1.5 MB`, `500000` or `off`: a size in the
    /// grammar of ``ByteCount/init(size:door:)``, then an optional `/s`; from 1 B/s to 2^62 B/s
    /// (``ByteCount/rate(_:door:)``), rounded down to whole bytes.
    ///
    /// - Returns: The rate, or `nil` for `off` (unlimited).
    /// - Throws: ``ConfigValueError`` when the text is not a rate in range.
    public static func parse(_ text: String) throws(ConfigValueError) -> ByteRate? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if trimmed == "off" { return nil }
        guard let amount = ByteCount.amount(trimmed.hasSuffix("/s") ? trimmed.dropLast(2) : Substring(trimmed)) else {
            throw ConfigValueError(Self.syntaxMessage(text))
        }
        return try checked(ByteCount.wholeBytes(amount), shown: "\"\(text)\"")
    }

    /// Parses a rate given either as text or as a plain integer of bytes per second.
    static func parse(integer: Int) throws(ConfigValueError) -> ByteRate {
        try checked(Int64(integer), shown: "\(integer)")
    }

    private static func checked(_ bytesPerSecond: Int64, shown: String) throws(ConfigValueError) -> ByteRate {
        do throws(BoundaryError) {
            return ByteRate(bytesPerSecond: try ByteCount.rate(bytesPerSecond, door: "rate"))
        } catch {
            throw ConfigValueError("expected \(error.expected), got \(shown) (use \"off\" for unlimited)")
        }
    }

    private static func syntaxMessage(_ text: String) -> String {
        "expected a rate like \"10MB/s\", \"2MiB/s\" or \"off\" (units B, KB, MB, GB, KiB, MiB, GiB), got \"\(text)\""
    }

    /// The largest exact unit: `10MB/s`, `2MiB/s`, `1500B/s`.
    public var description: String {
        for (name, bytes) in Self.units.reversed() where name != "kB" && bytes > 1 {
            if bytesPerSecond % bytes == 0 { return "\(bytesPerSecond / bytes)\(name)/s" }
        }
        return "\(bytesPerSecond)B/s"
    }

    /// Orders rates from slowest to fastest.
    public static func < (lhs: ByteRate, rhs: ByteRate) -> Bool {
        lhs.bytesPerSecond < rhs.bytesPerSecond
    }
}
