import Foundation
import Testing
@testable import Paperboy
import PaperboyTesting

/// The one range check of byte counts from outside, in each form a count arrives in.
@Suite(.timeLimit(.minutes(1)))
struct ByteCountTests {
    static let max = Int64(1) << 62

    @Test(arguments: [
        (0, 0), (1, 1), (4_611_686_018_427_387_904, 4_611_686_018_427_387_904),
        (4_611_686_018_427_387_905, nil), (-1, nil), (Int64.max, nil), (Int64.min, nil),
    ] as [(Int64, Int64?)])
    func integers(_ value: Int64, _ bytes: Int64?) {
        #expect((try? ByteCount(value, door: "d"))?.bytes == bytes, "\(value)")
    }

    @Test func integersOfOtherWidths() {
        #expect((try? ByteCount(UInt64.max, door: "d")) == nil)
        #expect((try? ByteCount(UInt64(Self.max), door: "d"))?.bytes == Self.max)
        #expect((try? ByteCount(Int32.min, door: "d")) == nil)
    }

    /// JSON numbers: whole and finite, `1e3` as 1000.
    @Test(arguments: [
        (0, 0), (-0.0, 0), (1e3, 1000), (1000.0, 1000), (4_611_686_018_427_387_904.0, 4_611_686_018_427_387_904),
        (4_611_686_018_427_387_904.0.nextUp, nil), (1e19, nil), (1e300, nil), (1.5, nil), (1e-300, nil), (-1, nil),
        (.nan, nil), (.infinity, nil), (-.infinity, nil), (-.nan, nil),
    ] as [(Double, Int64?)])
    func jsonNumbers(_ value: Double, _ bytes: Int64?) {
        #expect((try? ByteCount(number: value, door: "d"))?.bytes == bytes, "\(value)")
    }

    /// Header digits: digits only, any number of them read without overflow.
    @Test(arguments: [
        ("0", 0), ("007", 7), ("4611686018427387904", 4_611_686_018_427_387_904), ("4611686018427387905", nil),
        ("9223372036854775807", nil), ("9223372036854775808", nil), (String(repeating: "9", count: 10_000), nil),
        ("", nil), ("1e3", nil), ("+5", nil), ("-0", nil), (" 5", nil), ("5 ", nil), ("5.0", nil), ("0x10", nil),
        ("\u{0665}", nil), ("５", nil), ("NaN", nil), ("5\u{0}", nil),
    ] as [(String, Int64?)])
    func headerDigits(_ text: String, _ bytes: Int64?) {
        #expect((try? ByteCount(digits: text, door: "Content-Length"))?.bytes == bytes, "\(text.prefix(30))")
    }

    /// Sizes with units, as the configuration and `paperboy purge --budget` write them.
    @Test(arguments: [
        ("0", 0), ("1000000", 1_000_000), ("500MB", 500_000_000), ("2GiB", 2 << 30), ("1.5 MB", 1_500_000), ("1KB", 1_000),
        ("1kB", 1_000), ("3KiB", 3_072), ("7B", 7), ("1.5B", 1), (" 5", 5), ("5 ", 5), ("5 MiB", 5 << 20),
        ("4611686018427387904", 4_611_686_018_427_387_904), ("4294967296GiB", 4_611_686_018_427_387_904),
        ("4611686018427387905", nil), ("4294967297GiB", nil), ("4294967296.5GiB", nil), (String(repeating: "9", count: 1_000), nil),
        ("5Mb", nil), ("5mb", nil), ("5mB", nil), ("5 Mbps", nil), ("5kib", nil), ("1e3", nil), ("+5", nil), ("-5", nil),
        ("5MB/s", nil), ("off", nil), ("", nil), ("MB", nil), (".5MB", nil), ("5.MB", nil), ("1..5MB", nil),
        ("NaN", nil), ("inf", nil), ("5 5", nil), ("５MB", nil),
    ] as [(String, Int64?)])
    func sizesWithUnits(_ text: String, _ bytes: Int64?) {
        #expect((try? ByteCount(size: text, door: "--budget"))?.bytes == bytes, "\(text.prefix(30))")
    }

    @Test(arguments: [(1, true), (0, false), (-1, false), (4_611_686_018_427_387_904, true), (4_611_686_018_427_387_905, false)]
        as [(Int64, Bool)])
    func rates(_ value: Int64, _ accepted: Bool) {
        #expect((try? ByteCount.rate(value, door: "d")) == (accepted ? value : nil), "\(value)")
    }

    @Test func errorsNameTheDoorWhatItTakesAndTheValue() {
        #expect {
            try ByteCount(size: "5Mb", door: "--budget")
        } throws: { error in
            (error as? BoundaryError)?.description
                == "--budget: expected a size such as \"500MB\", \"2GiB\" or a number of bytes (units B, KB, MB, GB, KiB, MiB, GiB; "
                + "at most 2^62 bytes), got \"5Mb\""
        }
        #expect {
            try ByteCount(Self.max + 1, door: "daemon request PURGE budget_bytes")
        } throws: { error in
            (error as? BoundaryError)?.description
                == "daemon request PURGE budget_bytes: expected a number of bytes (a whole number from 0 to 2^62), got 4611686018427387905"
        }
        // A flood of digits is not repeated in the message, and a control character is escaped.
        #expect {
            try ByteCount(digits: String(repeating: "9", count: 100_000) + "\u{1B}", door: "Content-Range")
        } throws: { error in
            guard let error = error as? BoundaryError else { return false }
            #expect(error.value == "\"" + String(repeating: "9", count: 39) + "… (100003 characters)", "\(error)")
            #expect(error.description.count < 200)
            return error.door == "Content-Range"
        }
        let library = LibraryError(BoundaryError(door: "purge(keep:budgetBytes:) budgetBytes", expected: ByteCount.expected, value: "-1"))
        #expect(library.code == .invalidRequest && library.message.hasPrefix("purge(keep:budgetBytes:) budgetBytes: expected"))
    }

    /// A damaged row's count reads as absent, never out of range.
    @Test func storedCountsOutOfRangeReadAsAbsent() {
        #expect(ByteCount(stored: Self.max)?.bytes == Self.max)
        #expect(ByteCount(stored: Self.max + 1) == nil && ByteCount(stored: -1) == nil && ByteCount(stored: nil) == nil)
        #expect(ByteCount.storedRate(0) == nil && ByteCount.storedRate(Self.max + 1) == nil && ByteCount.storedRate(5) == 5)
    }

    /// The library's API is a door too: `purge(budgetBytes:)` and an asset's `maxBytesPerSecond`.
    @Test func theLibrarysAPIRefusesCountsAndRatesOutOfRange() async throws {
        let folder = TempFolder()
        let library = try Library.open(at: folder.file("library"), transports: TransportRegistry([InMemoryTransport()]),
                                       configuration: Library.Configuration.forTests())
        let issue = try await library.addIssue(name: "i", date: Date())
        for rate: Int64 in [0, -1, Self.max + 1] {
            await #expect {
                try await issue.addAsset(AssetRequest(url: URL(string: "mem://example/a")!, destinationPath: "a", maxBytesPerSecond: rate))
            } throws: { error in
                guard let error = error as? LibraryError else { return false }
                return error.code == .invalidRequest && error.message.hasPrefix("maxBytesPerSecond of mem://example/a: expected a rate")
                    && error.message.hasSuffix("got \(rate)")
            }
        }
        #expect(issue.assets.isEmpty)
        _ = try await issue.addAsset(AssetRequest(url: URL(string: "mem://example/a")!, destinationPath: "a", maxBytesPerSecond: Self.max))
        for budget: Int64 in [-1, Self.max + 1] {
            await #expect {
                try await library.purge(budgetBytes: budget)
            } throws: { error in
                (error as? LibraryError)?.code == .invalidRequest
            }
        }
        #expect(try await library.issue(named: "i") != nil)
        await library.close()
    }
}
