import Foundation
import GRDB
#if canImport(Glibc)
import Glibc
#endif

/// A date as the library stores it: text `yyyy-MM-dd HH:mm:ss.SSS` in UTC, exactly the form
/// GRDB gives `Date`, so libraries written before and after read the same.
///
/// Written and read by hand: GRDB's own conversion goes through `DateFormatter` and an
/// en_US_POSIX `Calendar`, which load ICU's locale, calendar and time-zone data on every run
/// (about 2 MiB of resident memory and a few milliseconds of start-up for one date).
struct StoredDate: DatabaseValueConvertible, Equatable {
    var date: Date

    init(_ date: Date) { self.date = date }

    var databaseValue: DatabaseValue { Self.text(date).databaseValue }

    /// Reads the stored form, or GRDB's general reading of any other (a number, a shorter SQLite
    /// date); `nil` for a date outside what ``LibraryDate`` allows (years 1 to 9999 in UTC), which
    /// no door lets in: a damaged row's 1e300 or infinity would trap later arithmetic.
    static func fromDatabaseValue(_ dbValue: DatabaseValue) -> StoredDate? {
        if case .string(let text) = dbValue.storage, let date = date(text) { return StoredDate(date) }
        guard let date = Date.fromDatabaseValue(dbValue), LibraryDate.problem(with: date) == nil else { return nil }
        return StoredDate(date)
    }

    /// `yyyy-MM-dd HH:mm:ss.SSS` in UTC, rounded to the nearest millisecond as `DateFormatter`
    /// rounds.
    static func text(_ date: Date) -> String {
        let exact = (date.timeIntervalSince1970 * 1000).rounded()
        // Far outside the years written by hand (and beyond Int64 milliseconds): GRDB's form.
        guard abs(exact) < 1e15 else { return Self.grdbText(date) }
        let milliseconds = Int64(exact)
        let (seconds, millisecond) = milliseconds.floorDivided(by: 1000)
        var time = time_t(seconds)
        var fields = tm()
        // Outside 1583...9999 GRDB's own form (DateFormatter's Julian calendar before the
        // Gregorian reform, its signs and widths), so such dates keep reading as they did.
        guard gmtime_r(&time, &fields) != nil, (1583...9999).contains(Int(fields.tm_year) + 1900)
        else { return Self.grdbText(date) }
        func padded(_ value: Int, _ width: Int) -> String {
            let digits = String(value)
            return String(repeating: "0", count: max(0, width - digits.count)) + digits
        }
        return "\(padded(Int(fields.tm_year) + 1900, 4))-\(padded(Int(fields.tm_mon) + 1, 2))-\(padded(Int(fields.tm_mday), 2)) "
            + "\(padded(Int(fields.tm_hour), 2)):\(padded(Int(fields.tm_min), 2)):\(padded(Int(fields.tm_sec), 2))"
            + ".\(padded(Int(millisecond), 3))"
    }

    /// GRDB's own text, for dates outside the years written by hand.
    private static func grdbText(_ date: Date) -> String {
        String.fromDatabaseValue(date.databaseValue) ?? ""
    }

    /// Reads exactly `yyyy-MM-dd HH:mm:ss.SSS` with fields in range; nil for any other text.
    static func date(_ text: String) -> Date? {
        let bytes = Array(text.utf8)
        guard bytes.count == 23 else { return nil }
        func number(_ range: Range<Int>) -> Int32? {
            var value: Int32 = 0
            for byte in bytes[range] {
                guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
                value = value * 10 + Int32(byte - UInt8(ascii: "0"))
            }
            return value
        }
        let separators: [(Int, UInt8)] = [(4, 45), (7, 45), (10, 32), (13, 58), (16, 58), (19, 46)]  // - - space : : .
        guard separators.allSatisfy({ bytes[$0.0] == $0.1 }),
              let year = number(0..<4), let month = number(5..<7), let day = number(8..<10),
              let hour = number(11..<13), let minute = number(14..<16), let second = number(17..<19),
              let millisecond = number(20..<23),
              (1583...9999).contains(year), (1...12).contains(month), (1...31).contains(day),
              hour < 24, minute < 60, second < 60
        else { return nil }
        var fields = tm()
        fields.tm_year = year - 1900
        fields.tm_mon = month - 1
        fields.tm_mday = day
        fields.tm_hour = hour
        fields.tm_min = minute
        fields.tm_sec = second
        let seconds = timegm(&fields)
        // timegm rolls a day past the month's end over; such text is not ours to read.
        guard fields.tm_mday == day else { return nil }
        // From the reference date in one division, as GRDB's reading gives it (going through
        // timeIntervalSince1970 would round twice and miss GRDB's value by one ulp).
        let sinceReference = (Int64(seconds) - 978_307_200) * 1000 + Int64(millisecond)
        return Date(timeIntervalSinceReferenceDate: Double(sinceReference) / 1000)
    }
}

private extension Int64 {
    /// Quotient rounded towards minus infinity, and the non-negative remainder.
    func floorDivided(by divisor: Int64) -> (Int64, Int64) {
        let remainder = self % divisor
        return remainder < 0 ? (self / divisor - 1, remainder + divisor) : (self / divisor, remainder)
    }
}
