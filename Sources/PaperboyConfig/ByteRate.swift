import Foundation

/// A transfer rate in bytes per second.
///
/// Written as a number and a unit, with an optional `/s`: `B`, `KB` (or `kB`), `MB`, `GB`
/// are powers of 1000; `KiB`, `MiB`, `GiB` are powers of 1024. A number without a unit is
/// bytes per second. Units are bytes, never bits, and are case-sensitive so that `Mb` is
/// not silently read as megabytes. `off` means unlimited.
public struct ByteRate: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The rate in bytes per second, at least 1.
    public var bytesPerSecond: Int64

    /// Creates a rate from bytes per second.
    public init(bytesPerSecond: Int64) {
        self.bytesPerSecond = bytesPerSecond
    }

    /// The units accepted by ``parse(_:)`` and their size in bytes.
    public static let units: [(name: String, bytes: Int64)] = [
        ("B", 1),
        ("KB", 1_000), ("kB", 1_000), ("MB", 1_000_000), ("GB", 1_000_000_000),
        ("KiB", 1_024), ("MiB", 1_048_576), ("GiB", 1_073_741_824),
    ]

    /// Parses a rate such as `10MB/s`, `2MiB/s`, `1.5 MB`, `500000` or `off`.
    ///
    /// - Returns: The rate, or `nil` for `off` (unlimited).
    /// - Throws: ``ConfigValueError`` when the text is not a positive rate.
    public static func parse(_ text: String) throws(ConfigValueError) -> ByteRate? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if trimmed == "off" { return nil }
        var body = Substring(trimmed)
        if body.hasSuffix("/s") { body = body.dropLast(2) }
        let numberEnd = body.firstIndex { !($0.isASCII && ($0.isNumber || $0 == ".")) } ?? body.endIndex
        let number = body[..<numberEnd]
        let unitName = body[numberEnd...].trimmingCharacters(in: .whitespaces)
        guard !number.isEmpty, let value = Decimal(string: String(number)), number.filter({ $0 == "." }).count <= 1,
              number.first != ".", number.last != "."
        else {
            throw ConfigValueError(Self.syntaxMessage(text))
        }
        let multiplier: Int64
        if unitName.isEmpty {
            multiplier = 1
        } else if let unit = units.first(where: { $0.name == unitName }) {
            multiplier = unit.bytes
        } else {
            throw ConfigValueError(Self.syntaxMessage(text))
        }
        let bytes = value * Decimal(multiplier)
        guard bytes >= 1 else {
            throw ConfigValueError("a rate must be at least 1 B/s, got \"\(text)\" (use \"off\" for unlimited)")
        }
        guard bytes <= Decimal(Int64.max) else {
            throw ConfigValueError("rate \"\(text)\" is too large")
        }
        var rounded = Decimal()
        var source = bytes
        NSDecimalRound(&rounded, &source, 0, .down)
        return ByteRate(bytesPerSecond: NSDecimalNumber(decimal: rounded).int64Value)
    }

    /// Parses a rate given either as text or as a plain integer of bytes per second.
    static func parse(integer: Int) throws(ConfigValueError) -> ByteRate {
        guard integer >= 1 else {
            throw ConfigValueError("a rate must be at least 1 B/s, got \(integer) (use \"off\" for unlimited)")
        }
        return ByteRate(bytesPerSecond: Int64(integer))
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
