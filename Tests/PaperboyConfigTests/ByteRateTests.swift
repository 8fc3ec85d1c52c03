import Testing
@testable import PaperboyConfig

@Suite(.timeLimit(.minutes(1))) struct ByteRateTests {
    @Test(arguments: [
        ("1B", 1), ("500", 500), ("500/s", 500), ("1KB/s", 1_000), ("1kB", 1_000), ("10MB/s", 10_000_000),
        ("10 MB/s", 10_000_000), ("1.5MB", 1_500_000), ("2GB/s", 2_000_000_000), ("1KiB", 1_024),
        ("2MiB/s", 2_097_152), ("1GiB", 1_073_741_824), (" 3MB/s ", 3_000_000),
        ("4294967296GiB/s", 4_611_686_018_427_387_904), ("4611686018427387904", 4_611_686_018_427_387_904),
    ] as [(String, Int64)])
    func parsesRates(_ text: String, _ bytesPerSecond: Int64) throws {
        #expect(try ByteRate.parse(text) == ByteRate(bytesPerSecond: bytesPerSecond))
    }

    @Test func offIsUnlimited() throws {
        #expect(try ByteRate.parse("off") == nil)
    }

    @Test(arguments: ["", "MB/s", "0", "0MB/s", "10Mb/s", "10mb", "10 Mbps", "ten MB", "1..5MB", ".5MB", "-1MB", "10MB/h", "unlimited", "0.1B",
                      "4294967297GiB/s", "4611686018427387905", "99999999999999999999999", "1e3", "+5"])
    func rejectsMalformedRates(_ text: String) {
        #expect(throws: ConfigValueError.self) { try ByteRate.parse(text) }
    }

    @Test func describesWithTheLargestExactUnit() {
        #expect(ByteRate(bytesPerSecond: 10_000_000).description == "10MB/s")
        #expect(ByteRate(bytesPerSecond: 2_097_152).description == "2MiB/s")
        #expect(ByteRate(bytesPerSecond: 1_500).description == "1500B/s")
        #expect(ByteRate(bytesPerSecond: 1_500_000).description == "1500KB/s")
    }

    @Test func scheduleEntriesParse() throws {
        #expect(try BandwidthScheduleEntry.parse("08:00 1MB/s") == .init(minuteOfDay: 480, rate: .init(bytesPerSecond: 1_000_000)))
        #expect(try BandwidthScheduleEntry.parse("23:59 off") == .init(minuteOfDay: 1_439, rate: nil))
        for bad in ["8:00 1MB/s", "24:00 off", "12:60 off", "12:00", "12:00 1MB/s extra", "ab:cd off"] {
            #expect(throws: ConfigValueError.self) { try BandwidthScheduleEntry.parse(bad) }
        }
    }

    @Test func scheduleRateWrapsPastMidnight() {
        let schedule: [BandwidthScheduleEntry] = [
            .init(minuteOfDay: 480, rate: .init(bytesPerSecond: 1)),
            .init(minuteOfDay: 1_140, rate: nil),
            .init(minuteOfDay: 1_380, rate: .init(bytesPerSecond: 3)),
        ]
        #expect(BandwidthScheduleEntry.rate(at: 60, in: schedule) == .init(bytesPerSecond: 3))
        #expect(BandwidthScheduleEntry.rate(at: 480, in: schedule) == .init(bytesPerSecond: 1))
        #expect(BandwidthScheduleEntry.rate(at: 1_200, in: schedule) == nil)
        #expect(BandwidthScheduleEntry.rate(at: 600, in: []) == nil)
    }
}
