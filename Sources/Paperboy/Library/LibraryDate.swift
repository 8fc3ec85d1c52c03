import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A date the library can record and read back: an instant in years 1 to 9999 of the
/// (proleptic Gregorian) calendar in UTC, to the millisecond, whatever offset it was written with.
///
/// The one range check for dates from outside. Every door that takes a date checks it here, once,
/// and reports the problem in its own terms, naming itself and the value: a catalog
/// (``problem(with:)``, as a catalog error naming the feed and the JSON path), the configuration
/// (file, line, key), `paperboy add --date`, ``Library/addIssue(name:date:)`` and the daemon's
/// `ADDISSUE` (``init(_:door:)``). The store's issue rows hold only such dates.
///
/// Why: an issue dated `9999-12-31T23:00:00-05:00` (year 10000 in UTC) was once accepted,
/// stored, and could not be read back; from then on every listing of the shelf came back empty.
public struct LibraryDate: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The instant.
    public let date: Date

    /// The earliest date the library records: 0001-01-01T00:00:00Z.
    public static let earliest = Date(timeIntervalSince1970: Double(earliestMilliseconds) / 1000)
    /// The latest date the library records: 9999-12-31T23:59:59.999Z.
    public static let latest = Date(timeIntervalSince1970: Double(latestMilliseconds) / 1000)

    static let earliestMilliseconds: Int64 = -62_135_596_800_000
    static let latestMilliseconds: Int64 = 253_402_300_799_999

    /// Checks `date` for the door named `door` (`"ADDISSUE date"`, `"addIssue(name:date:)"`).
    ///
    /// - Throws: ``LibraryError`` `.invalidRequest` naming the door and the date when the date
    ///   lies outside years 1 to 9999 in UTC (after rounding to the millisecond, as it is stored).
    public init(_ date: Date, door: String) throws(LibraryError) {
        if let problem = Self.problem(with: date) {
            throw LibraryError(.invalidRequest, "\(door): \(problem)")
        }
        self.date = date
    }

    /// A date read from the store, which reads only dates in range.
    init(stored date: Date) { self.date = date }

    /// Why `date` cannot be recorded (`"10000-01-01T04:00:00Z is in year 10000 in UTC; …"`), or
    /// `nil` when it can. Doors with their own error type (catalogs, the configuration) put this
    /// text in it, after the value as the source wrote it.
    public static func problem(with date: Date) -> String? {
        let milliseconds = (date.timeIntervalSince1970 * 1000).rounded()
        // NaN fails both comparisons.
        if milliseconds >= Double(earliestMilliseconds), milliseconds <= Double(latestMilliseconds) { return nil }
        return "\(utcText(date)) is outside the dates the library records (years 1 to 9999 in UTC, whatever the offset)"
    }

    /// The instant of a calendar date and time at `offsetSeconds` east of UTC (proleptic
    /// Gregorian, as ISO 8601 counts), or `nil` when a field is out of range (31 April, 24:00).
    /// Not range-checked: pass the result to ``problem(with:)`` or ``init(_:door:)``.
    ///
    /// By hand (`timegm`), not through `Calendar`, which loads ICU's zone data and switches to the
    /// Julian calendar before 1582.
    public static func utc(year: Int, month: Int, day: Int, hour: Int = 0, minute: Int = 0, second: Int = 0,
                           nanosecond: Int = 0, offsetSeconds: Int = 0) -> Date? {
        guard (1...9999).contains(year) else { return nil }
        return instant(year: year, month: month, day: day, hour: hour, minute: minute, second: second,
                       nanosecond: nanosecond, offsetSeconds: offsetSeconds)
    }

    /// ``utc(year:month:day:hour:minute:second:nanosecond:offsetSeconds:)`` for any year from 0
    /// to 999,999 (what ``parse(_:)`` reads, so that year 10000 is refused as out of range).
    private static func instant(year: Int, month: Int, day: Int, hour: Int, minute: Int, second: Int,
                                nanosecond: Int, offsetSeconds: Int) -> Date? {
        guard (0...999_999).contains(year), (1...12).contains(month), (1...31).contains(day),
              (0..<24).contains(hour), (0..<60).contains(minute), (0..<60).contains(second),
              (0..<1_000_000_000).contains(nanosecond), abs(offsetSeconds) < 86_400
        else { return nil }
        var fields = tm()
        fields.tm_year = Int32(year - 1900)
        fields.tm_mon = Int32(month - 1)
        fields.tm_mday = Int32(day)
        fields.tm_hour = Int32(hour)
        fields.tm_min = Int32(minute)
        fields.tm_sec = Int32(second)
        let seconds = timegm(&fields)
        guard fields.tm_mday == Int32(day) else { return nil }  // 31 April rolled over
        return Date(timeIntervalSince1970: Double(seconds) + Double(nanosecond) / 1e9 - Double(offsetSeconds))
    }

    /// Reads a date from outside (a catalog, the daemon's `ADDISSUE`): `YYYY-MM-DD` (midnight
    /// UTC) or an ISO 8601 / RFC 3339 date-time `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)` (`T` or
    /// `t`, `Z` or `z`), in the proleptic Gregorian calendar as ``utc(year:month:day:hour:minute:second:nanosecond:offsetSeconds:)``
    /// counts (Foundation's ISO 8601 parser switches to the Julian calendar before 1582: 1500-03-01
    /// came out two days off). `nil` for anything else. Not range-checked: pass the result to
    /// ``problem(with:)`` or ``init(_:door:)``.
    public static func parse(_ text: String) -> Date? {
        let bytes = Array(text.utf8)
        func number(_ range: Range<Int>) -> Int? {
            guard range.upperBound <= bytes.count else { return nil }
            var value = 0
            for byte in bytes[range] {
                guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) else { return nil }
                value = value * 10 + Int(byte - UInt8(ascii: "0"))
            }
            return value
        }
        // Four digits of year, or up to six (year 10000 is read, then refused as out of range).
        guard let dash = bytes.prefix(7).firstIndex(of: UInt8(ascii: "-")), dash >= 4 else { return nil }
        let date = dash + 1
        guard bytes.count >= date + 5, bytes[date + 2] == UInt8(ascii: "-"),
              let year = number(0..<dash), let month = number(date..<date + 2), let day = number(date + 3..<date + 5) else { return nil }
        if bytes.count == date + 5 {
            return instant(year: year, month: month, day: day, hour: 0, minute: 0, second: 0, nanosecond: 0, offsetSeconds: 0)
        }
        let time = date + 6
        guard bytes.count >= time + 9, bytes[time - 1] == UInt8(ascii: "T") || bytes[time - 1] == UInt8(ascii: "t"),
              bytes[time + 2] == UInt8(ascii: ":"), bytes[time + 5] == UInt8(ascii: ":"),
              let hour = number(time..<time + 2), let minute = number(time + 3..<time + 5),
              let second = number(time + 6..<time + 8) else { return nil }
        var index = time + 8
        var nanosecond = 0
        if bytes[index] == UInt8(ascii: ".") {
            index += 1
            let start = index
            while index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) { index += 1 }
            let digits = index - start
            guard digits > 0, let fraction = number(start..<min(index, start + 9)) else { return nil }
            nanosecond = fraction * Int(pow(10, Double(9 - min(digits, 9))))
        }
        guard index < bytes.count else { return nil }
        var offset = 0
        switch bytes[index] {
        case UInt8(ascii: "Z"), UInt8(ascii: "z"):
            index += 1
        case UInt8(ascii: "+"), UInt8(ascii: "-"):
            guard index + 6 == bytes.count, bytes[index + 3] == UInt8(ascii: ":"),
                  let hours = number(index + 1..<index + 3), let minutes = number(index + 4..<index + 6),
                  hours < 24, minutes < 60 else { return nil }
            offset = (hours * 3600 + minutes * 60) * (bytes[index] == UInt8(ascii: "-") ? -1 : 1)
            index += 6
        default:
            return nil
        }
        guard index == bytes.count else { return nil }
        return instant(year: year, month: month, day: day, hour: hour, minute: minute, second: second, nanosecond: nanosecond,
                       offsetSeconds: offset)
    }

    /// `date` as `yyyy-MM-ddTHH:mm:ssZ` in UTC (the year may have more digits, or a sign), or
    /// its seconds since 1970 when it is beyond any calendar; what ``parse(_:)`` reads back for
    /// every date the library records (to the second).
    public static func utcText(_ date: Date) -> String {
        let seconds = date.timeIntervalSince1970.rounded(.down)
        guard seconds.isFinite, abs(seconds) < 1e15 else { return "\(date.timeIntervalSince1970) seconds since 1970" }
        var time = time_t(seconds)
        var fields = tm()
        guard gmtime_r(&time, &fields) != nil else { return "\(date.timeIntervalSince1970) seconds since 1970" }
        func padded(_ value: Int32, _ width: Int) -> String {
            let digits = String(abs(value))
            return (value < 0 ? "-" : "") + String(repeating: "0", count: max(0, width - digits.count)) + digits
        }
        return "\(padded(fields.tm_year + 1900, 4))-\(padded(fields.tm_mon + 1, 2))-\(padded(fields.tm_mday, 2))T"
            + "\(padded(fields.tm_hour, 2)):\(padded(fields.tm_min, 2)):\(padded(fields.tm_sec, 2))Z"
    }

    /// `date` as ``utcText(_:)`` writes it, with milliseconds when it has any
    /// (`2026-11-21T09:31:04.250Z`), as the daemon's wire carries dates: a date the library
    /// recorded comes back as that date. Rounded up, so never earlier than `date` (a retry's
    /// `until` written to the second came out before the clock's now); an instant less than a
    /// microsecond above a millisecond, as a recorded date's `Double` holds it, is that millisecond.
    package static func utcMillisecondText(_ date: Date) -> String {
        let milliseconds = (date.timeIntervalSince1970 * 1000 - 0.001).rounded(.up)
        let seconds = (milliseconds / 1000).rounded(.down)
        let text = utcText(Date(timeIntervalSince1970: seconds))
        let fraction = Int(milliseconds - seconds * 1000)
        guard fraction > 0, fraction < 1000, text.hasSuffix("Z") else { return text }
        let digits = String(fraction)
        return "\(text.dropLast()).\(String(repeating: "0", count: 3 - digits.count))\(digits)Z"
    }

    public static func < (lhs: LibraryDate, rhs: LibraryDate) -> Bool { lhs.date < rhs.date }

    public var description: String { Self.utcText(date) }
}
