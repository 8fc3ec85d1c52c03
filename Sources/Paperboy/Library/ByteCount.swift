import Foundation

/// A number of bytes from outside: a whole number from 0 to 2^62 (``max``).
///
/// The one range check for byte counts, positions and sizes. Every door that takes one makes it
/// here, once, in the form the value arrives in: an integer (a daemon request, a helper's `BEGIN`,
/// the configuration), a JSON number (a catalog's `size`: ``init(number:door:)``), header digits
/// (`Content-Length`, `Content-Range`: ``init(digits:door:)``) or a size with a unit
/// (`"500MB"`, `"2GiB"`: ``init(size:door:)``, read alike by the configuration and
/// `paperboy purge --budget`). A refused value is a ``BoundaryError`` naming the door and the
/// value. Rates go through ``rate(_:door:)``.
///
/// Why 2^62: far beyond any file, and small enough that a position plus a frame, or a length
/// plus a length, never overflows an `Int64`. A catalog once announced sizes up to `Int64.max`,
/// each door had its own copy of the rule, and one door had no upper bound at all.
public struct ByteCount: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The number of bytes, from 0 to ``max``.
    public let bytes: Int64

    /// The largest byte count, position or size accepted from outside: 2^62.
    public static let max: Int64 = 1 << 62

    /// What the integer doors take, for their messages.
    public static let expected = "a number of bytes (a whole number from 0 to 2^62)"

    /// A count read back from the store, which holds only counts made here; `nil` for a damaged
    /// row's value out of range (the store reads it as absent, never traps on it).
    package init?(stored value: Int64?) {
        guard let value, (0...Self.max).contains(value) else { return nil }
        bytes = value
    }

    /// Checks an integer, such as a daemon request's or a helper frame's.
    ///
    /// - Throws: ``BoundaryError`` naming `door` when `value` is negative or above 2^62.
    public init(_ value: some BinaryInteger, door: String) throws(BoundaryError) {
        guard let count = ByteCount(stored: Int64(exactly: value)) else {
            throw BoundaryError(door: door, expected: Self.expected, value: String(value))
        }
        self = count
    }

    /// Checks a JSON number: whole and finite (`1000`, `1e3` and `1000.0` alike), from 0 to 2^62.
    ///
    /// - Throws: ``BoundaryError`` naming `door` for a fraction, NaN, an infinity, a negative
    ///   number or one above 2^62.
    public init(number value: Double, door: String) throws(BoundaryError) {
        // NaN fails the comparisons; 2^62 is exact in a Double.
        guard value >= 0, value <= Double(Self.max), value.rounded(.towardZero) == value else {
            throw BoundaryError(door: door, expected: Self.expected, value: "\(value)")
        }
        bytes = Int64(value)
    }

    /// Checks a count written as decimal digits only, as HTTP headers write them: no sign, no
    /// space, no exponent, no fraction; from 0 to 2^62 (any number of digits is read without
    /// overflow: too many is too large).
    ///
    /// - Throws: ``BoundaryError`` naming `door` for anything else.
    public init(digits text: some StringProtocol, door: String) throws(BoundaryError) {
        guard let bytes = Self.digitsValue(text.utf8), bytes <= Self.max else {
            throw BoundaryError(door: door, expected: "decimal digits only, from 0 to 2^62", value: "\"\(text)\"")
        }
        self.bytes = bytes
    }

    /// The value of a non-empty run of ASCII digits, saturating at `Int64.max`; `nil` when
    /// `utf8` is empty or holds anything else.
    package static func digitsValue(_ utf8: some Collection<UInt8>) -> Int64? {
        guard !utf8.isEmpty else { return nil }
        var value: Int64 = 0
        for byte in utf8 {
            guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) else { return nil }
            let (times, overflow1) = value.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = times.addingReportingOverflow(Int64(byte - UInt8(ascii: "0")))
            value = overflow1 || overflow2 ? .max : sum
        }
        return value
    }

    // MARK: Sizes with units

    /// The units of sizes and rates, and their size in bytes. `B`, `KB` (or `kB`), `MB`, `GB`
    /// are powers of 1000; `KiB`, `MiB`, `GiB` powers of 1024. Case-sensitive, and always
    /// bytes: `Mb` is refused, not read as megabytes.
    public static let units: [(name: String, bytes: Int64)] = [
        ("B", 1),
        ("KB", 1_000), ("kB", 1_000), ("MB", 1_000_000), ("GB", 1_000_000_000),
        ("KiB", 1_024), ("MiB", 1_048_576), ("GiB", 1_073_741_824),
    ]

    /// What ``init(size:door:)`` takes, for messages.
    public static let expectedSize =
        "a size such as \"500MB\", \"2GiB\" or a number of bytes (units B, KB, MB, GB, KiB, MiB, GiB; at most 2^62 bytes)"

    /// Reads a size: a number (decimals allowed), an optional space and an optional unit of
    /// ``units`` (`"500MB"`, `"2GiB"`, `"1.5 MB"`, `"1000000"`), rounded down to whole bytes.
    /// Spaces around it are ignored. The one grammar of sizes: the configuration's and
    /// `paperboy purge --budget`.
    ///
    /// - Throws: ``BoundaryError`` naming `door` when the text is not a size or is above 2^62 bytes.
    public init(size text: String, door: String) throws(BoundaryError) {
        guard let amount = Self.amount(text), case let bytes = Self.wholeBytes(amount), bytes <= Self.max else {
            throw BoundaryError(door: door, expected: Self.expectedSize, value: "\"\(text)\"")
        }
        self.bytes = bytes
    }

    /// `amount` (from ``amount(_:)``, never negative) rounded down to whole bytes; `Int64.max`
    /// for anything above ``max``.
    package static func wholeBytes(_ amount: Decimal) -> Int64 {
        guard amount <= Decimal(max) else { return .max }
        var rounded = Decimal()
        var exact = amount
        NSDecimalRound(&rounded, &exact, 0, .down)
        return NSDecimalNumber(decimal: rounded).int64Value
    }

    /// The bytes `text` spells in the grammar of ``init(size:door:)``, not rounded and not
    /// range-checked; `nil` when it does not follow it. Rates read the same grammar (then `/s`).
    package static func amount(_ text: some StringProtocol) -> Decimal? {
        let body = text.trimmingCharacters(in: .whitespaces)
        let numberEnd = body.firstIndex { !($0.isASCII && ($0.isNumber || $0 == ".")) } ?? body.endIndex
        let number = body[..<numberEnd]
        let unitName = body[numberEnd...].trimmingCharacters(in: .whitespaces)
        let whole = number.prefix { $0 != "." }
        // More digits than 2^62 has is out of range whatever follows; Decimal is not asked.
        guard !number.isEmpty, number.first != ".", number.last != ".", number.filter({ $0 == "." }).count <= 1,
              whole.count <= 20, let value = Decimal(string: String(number))
        else { return nil }
        if unitName.isEmpty { return value }
        guard let unit = units.first(where: { $0.name == unitName }) else { return nil }
        return value * Decimal(unit.bytes)
    }

    // MARK: Rates

    /// What ``rate(_:door:)`` takes, for messages.
    public static let expectedRate = "a rate of at least 1 B/s and at most 2^62 B/s"

    /// A rate read back from the store; `nil` for a damaged row's value out of range.
    package static func storedRate(_ value: Int64?) -> Int64? {
        guard let value, (1...max).contains(value) else { return nil }
        return value
    }

    /// Checks a rate in bytes per second from outside (a daemon's `ADDASSET`, an asset's
    /// `maxBytesPerSecond`, the configuration): from 1 to 2^62.
    ///
    /// - Throws: ``BoundaryError`` naming `door` for 0, a negative rate or one above 2^62.
    public static func rate(_ bytesPerSecond: some BinaryInteger, door: String) throws(BoundaryError) -> Int64 {
        guard let rate = storedRate(Int64(exactly: bytesPerSecond)) else {
            throw BoundaryError(door: door, expected: expectedRate, value: String(bytesPerSecond))
        }
        return rate
    }

    public static func < (lhs: ByteCount, rhs: ByteCount) -> Bool { lhs.bytes < rhs.bytes }

    public var description: String { "\(bytes) bytes" }
}

extension FixedWidthInteger {
    /// `self + other`, held at `max` (or `min`) instead of trapping: the rule for every total of
    /// counts or byte counts that came from outside (a daemon's listing or activity, a stored
    /// row), each of which fits while their sum may not.
    package func addingSaturated(_ other: Self) -> Self {
        let (sum, overflow) = addingReportingOverflow(other)
        return overflow ? (other > 0 ? .max : .min) : sum
    }
}
