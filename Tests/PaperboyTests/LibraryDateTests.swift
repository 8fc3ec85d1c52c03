import Foundation
import Testing
@testable import Paperboy
import PaperboyTesting

/// Issue 26, case 2: an issue dated in year 10000 in UTC was stored, could not be read back, and
/// from then on hid every issue of the shelf. The library records dates in years 1 to 9999 in UTC.
@Suite("Library dates", .timeLimit(.minutes(1)))
struct LibraryDateTests {
    let folder = TempFolder()
    var root: URL { folder.file("library") }

    func open() throws -> Library {
        try Library.open(at: root, transports: TransportRegistry([InMemoryTransport()]), configuration: Library.Configuration.forTests())
    }

    /// 9999-12-31T23:00:00-05:00, 10000-01-01T00:00:00Z, the first millisecond of year 10000
    /// after rounding, the last of year 0, and what no calendar holds.
    static let outside: [Date] = [
        Date(timeIntervalSince1970: 253_402_300_800 + 4 * 3600), Date(timeIntervalSince1970: 253_402_300_800),
        Date(timeIntervalSince1970: 253_402_300_799.9996), Date(timeIntervalSince1970: -62_135_596_800.001),
        Date(timeIntervalSince1970: 1e300), Date(timeIntervalSince1970: -.infinity), Date(timeIntervalSince1970: .nan),
    ]

    @Test func anIssueDatedOutsideYears1To9999IsRefusedAndTheShelfStays() async throws {
        var library = try open()
        try await library.addIssue(name: "a", date: Date(timeIntervalSince1970: 1_790_000_000))
        for date in Self.outside {
            await #expect(throws: LibraryError.self, "\(date.timeIntervalSince1970)") {
                try await library.addIssue(name: "far", date: date)
            }
        }
        await library.close()
        library = try open()
        #expect(library.issues.map(\.name) == ["a"])
        await library.close()
    }

    @Test func theErrorNamesTheDoorAndTheDate() async throws {
        let library = try open()
        let error = try await #require(throws: LibraryError.self) {
            try await library.addIssue(name: "far", date: Self.outside[0])
        }
        #expect(error.code == .invalidRequest)
        #expect(error.message == "addIssue(name:date:) 'far': 10000-01-01T04:00:00Z is outside the dates the library records "
                + "(years 1 to 9999 in UTC, whatever the offset)")
        #expect(try await library.issue(named: "far") == nil)
        await library.close()
    }

    @Test func theFirstAndLastRecordableDatesReadBackExactly() async throws {
        var library = try open()
        let first = Date(timeIntervalSince1970: -62_135_596_800)
        let last = Date(timeIntervalSince1970: 253_402_300_799.999)
        let nearlyRounded = Date(timeIntervalSince1970: 253_402_300_799.9994)
        try await library.addIssue(name: "first", date: first)
        try await library.addIssue(name: "last", date: last)
        try await library.addIssue(name: "rounded", date: nearlyRounded)
        try await library.addIssue(name: "reform", date: Date(timeIntervalSince1970: -12_219_292_800))  // 1582-10-15
        await library.close()
        library = try open()
        #expect(library.issues.map(\.name) == ["rounded", "last", "reform", "first"])
        #expect(try await library.issue(named: "first")?.date == first)
        #expect(try await library.issue(named: "last")?.date == last)
        #expect(try await library.issue(named: "rounded")?.date == last)
        #expect(try await library.issue(named: "reform")?.date == Date(timeIntervalSince1970: -12_219_292_800))
        await library.close()
    }

    @Test func calendarFieldsAreReadInTheProlepticGregorianCalendar() throws {
        #expect(LibraryDate.utc(year: 1, month: 1, day: 1) == LibraryDate.earliest)
        #expect(LibraryDate.utc(year: 9999, month: 12, day: 31, hour: 23, minute: 59, second: 59, nanosecond: 999_000_000)
                == LibraryDate.latest)
        #expect(LibraryDate.utc(year: 2026, month: 4, day: 31) == nil)
        #expect(LibraryDate.utc(year: 10000, month: 1, day: 1) == nil)
        let shifted = try #require(LibraryDate.utc(year: 9999, month: 12, day: 31, hour: 23, offsetSeconds: -5 * 3600))
        #expect(LibraryDate.problem(with: shifted)?.hasPrefix("10000-01-01T04:00:00Z is outside") == true)
        #expect(LibraryDate.problem(with: LibraryDate.latest) == nil)
        #expect(LibraryDate.problem(with: LibraryDate.earliest) == nil)
    }

    /// The daemon's wire writes dates to the millisecond, as the library records them; once it
    /// wrote them to the second, and a retry 5 ms away came out as "now".
    @Test func theWiresTextCarriesMillisecondsRoundedUpAndReadsBackTheRecordedDate() throws {
        #expect(LibraryDate.utcMillisecondText(Date(timeIntervalSince1970: 1_795_000_000)) == "2026-11-18T11:06:40Z")
        #expect(LibraryDate.utcMillisecondText(Date(timeIntervalSince1970: 1_795_000_000.05)) == "2026-11-18T11:06:40.050Z")
        #expect(LibraryDate.utcMillisecondText(Date(timeIntervalSince1970: 1_795_000_000.0041)) == "2026-11-18T11:06:40.005Z")
        #expect(LibraryDate.utcMillisecondText(Date(timeIntervalSince1970: 1_795_000_000.9999)) == "2026-11-18T11:06:41Z")
        #expect(LibraryDate.utcMillisecondText(Date(timeIntervalSince1970: -1.25)) == "1969-12-31T23:59:58.750Z")
        #expect(LibraryDate.utcMillisecondText(LibraryDate.latest) == "9999-12-31T23:59:59.999Z")
        #expect(LibraryDate.utcMillisecondText(LibraryDate.earliest) == "0001-01-01T00:00:00Z")
        for date in [LibraryDate.latest, LibraryDate.earliest, Date(timeIntervalSince1970: 1_795_000_000.123),
                     Date(timeIntervalSince1970: -12_219_292_800.001)] {
            let text = LibraryDate.utcMillisecondText(date)
            let read = try #require(LibraryDate.parse(text), "\(text)")
            #expect(abs(read.timeIntervalSince(date)) < 0.000_001, "\(text): \(read.timeIntervalSince1970) for \(date.timeIntervalSince1970)")
        }
    }
}
