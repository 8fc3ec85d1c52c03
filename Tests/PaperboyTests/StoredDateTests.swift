import Foundation
import GRDB
import Testing
@testable import Paperboy

@Suite("Stored dates", .timeLimit(.minutes(2)))
struct StoredDateTests {
    /// GRDB's own storage formatter, as configured in GRDB (the form libraries already hold).
    static let grdbFormatter: DateFormatter = {
        let formatter = DateFormatter()
        formatter.dateFormat = "yyyy-MM-dd HH:mm:ss.SSS"
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(secondsFromGMT: 0)
        return formatter
    }()

    static let samples: [Double] = [
        0, 0.001, 0.0999, 59.9996, 86_399.999, 86_400, -0.001, -86_400.5, 951_782_400,  // 2000-02-29
        1_700_000_000.123, 1_795_000_000.987_6, 4_107_542_400,  // 2100-03-01
        -2_208_988_800,  // 1900-01-01
        253_402_300_799.999,  // 9999-12-31 23:59:59.999
        // Outside 1583...9999: GRDB's own text and reading (Julian calendar before 1582).
        -12_219_379_201,  // 1582-10-04 23:59:59 (Julian)
        -62_135_596_800,  // 0001-01-01
        -62_230_000_000,  // before year 1
        253_402_300_800,  // 10000-01-01
        1e300,  // beyond Int64 milliseconds
    ]

    @Test(arguments: samples)
    func writesWhatGRDBWrites(seconds: Double) {
        let date = Date(timeIntervalSince1970: seconds)
        #expect(StoredDate.text(date) == Self.grdbFormatter.string(from: date))
    }

    @Test(arguments: samples)
    func readsBackToTheMillisecond(seconds: Double) throws {
        let date = Date(timeIntervalSince1970: seconds)
        let stored = StoredDate(date).databaseValue
        let read = StoredDate.fromDatabaseValue(stored)?.date
        // Bit for bit what GRDB reads from the same text (nil where GRDB cannot read it either,
        // or reads a date outside years 1 to 9999 in UTC, which no door lets in).
        #expect(read == Date.fromDatabaseValue(stored).flatMap { LibraryDate.problem(with: $0) == nil ? $0 : nil })
        if (-12_219_292_800...253_402_300_799.999).contains(seconds), let read {  // 1583...9999
            #expect(abs(read.timeIntervalSince1970 - (seconds * 1000).rounded() / 1000) < 0.000_001)
        }
    }

    @Test func otherFormsFallBackToGRDBsReading() throws {
        #expect(StoredDate.fromDatabaseValue("2025-01-02".databaseValue)?.date == Date(timeIntervalSince1970: 1_735_776_000))
        #expect(StoredDate.fromDatabaseValue(1_000.databaseValue)?.date == Date(timeIntervalSince1970: 1_000))
        // Out-of-range fields are GRDB's to judge, as before (it rolls month 13 over).
        let odd = "2025-13-02 00:00:00.000".databaseValue
        #expect(StoredDate.fromDatabaseValue(odd)?.date == Date.fromDatabaseValue(odd))
        #expect(StoredDate.fromDatabaseValue("not a date".databaseValue) == nil)
        #expect(StoredDate.fromDatabaseValue(DatabaseValue.null) == nil)
    }
}

extension StoredDateTests {
    @Test func aDayPastTheMonthsEndIsNotReadAsTheNextMonth() {
        #expect(StoredDate.date("2026-02-30 00:00:00.000") == nil)
        #expect(StoredDate.date("2024-02-29 12:00:00.000") == Date(timeIntervalSince1970: 1_709_208_000))
    }
}

extension StoredDateTests {
    @Test func randomMillisecondsMatchGRDBBothWays() {
        var generator = SystemRandomNumberGenerator()
        var inexact: [String] = []
        for _ in 0..<1000 {
            // 1906...2096, whole milliseconds as stored.
            let milliseconds = Int64.random(in: -2_000_000_000_000...4_000_000_000_000, using: &generator)
            let date = Date(timeIntervalSince1970: Double(milliseconds) / 1000)
            let text = StoredDate.text(date)
            #expect(text == Self.grdbFormatter.string(from: date))
            guard let ours = StoredDate.date(text), let grdb = Date.fromDatabaseValue(text.databaseValue) else {
                Issue.record("unreadable: \(text)")
                continue
            }
            // Both name the stored millisecond. GRDB goes through Calendar, which lands a unit or
            // two in the last place off now and then (about 1 in 25,000, and 2 ulps seen once);
            // rounding twice made a third of dates differ.
            #expect((ours.timeIntervalSince1970 * 1000).rounded() == Double(milliseconds), "\(text)")
            #expect((grdb.timeIntervalSince1970 * 1000).rounded() == Double(milliseconds), "\(text)")
            if ours.timeIntervalSinceReferenceDate != grdb.timeIntervalSinceReferenceDate { inexact.append(text) }
        }
        #expect(inexact.count <= 2, "\(inexact)")
    }
}
