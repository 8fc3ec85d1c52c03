import Foundation

/// The `[bandwidth]` section: a global limit, a per-transfer limit and a time-of-day schedule.
public struct BandwidthSettings: Sendable, Equatable {
    /// The rate shared by all transfers (`limit`); `nil` means unlimited, the default.
    public var limit: ByteRate?
    /// The rate of any single transfer (`per_transfer`); `nil` means unlimited, the default.
    public var perTransfer: ByteRate?
    /// Global limits by time of day (`schedule`), sorted by time; empty by default.
    ///
    /// Each entry holds from its time until the next entry's; the last one wraps past
    /// midnight until the first. When the schedule is not empty it replaces ``limit``.
    public var schedule: [BandwidthScheduleEntry]

    /// Creates bandwidth settings; the defaults are those of an absent `[bandwidth]` section.
    public init(limit: ByteRate? = nil, perTransfer: ByteRate? = nil, schedule: [BandwidthScheduleEntry] = []) {
        self.limit = limit
        self.perTransfer = perTransfer
        self.schedule = schedule
    }
}

/// One `"HH:MM rate"` entry of the bandwidth schedule.
public struct BandwidthScheduleEntry: Sendable, Equatable {
    /// The local time the entry starts, in minutes since midnight (0...1439).
    public var minuteOfDay: Int
    /// The global limit from that time on; `nil` means unlimited (`off`).
    public var rate: ByteRate?
    /// The line the entry was written on, if known.
    public var line: Int?

    /// Creates a schedule entry.
    public init(minuteOfDay: Int, rate: ByteRate?, line: Int? = nil) {
        self.minuteOfDay = minuteOfDay
        self.rate = rate
        self.line = line
    }

    /// Parses `"HH:MM rate"`, such as `"08:00 1MB/s"` or `"23:00 off"`.
    ///
    /// - Throws: ``ConfigValueError`` for a bad time or rate.
    public static func parse(_ text: String) throws(ConfigValueError) -> BandwidthScheduleEntry {
        let parts = text.split(separator: " ", omittingEmptySubsequences: true)
        guard parts.count == 2 else {
            throw ConfigValueError("expected \"HH:MM rate\", such as \"08:00 1MB/s\" or \"23:00 off\", got \"\(text)\"")
        }
        let time = parts[0].split(separator: ":", omittingEmptySubsequences: false)
        guard time.count == 2, time[0].count == 2, time[1].count == 2,
              time.allSatisfy({ $0.allSatisfy { $0.isASCII && $0.isNumber } }),
              let hour = Int(time[0]), let minute = Int(time[1]), hour < 24, minute < 60
        else {
            throw ConfigValueError("expected a time HH:MM between 00:00 and 23:59, got \"\(parts[0])\" in \"\(text)\"")
        }
        let rate = try ByteRate.parse(String(parts[1]))
        return BandwidthScheduleEntry(minuteOfDay: hour * 60 + minute, rate: rate)
    }

    /// The rate in force at a minute of the day, or `nil` when unlimited or the schedule is empty.
    public static func rate(at minuteOfDay: Int, in schedule: [BandwidthScheduleEntry]) -> ByteRate? {
        guard let last = schedule.last else { return nil }
        let entry = schedule.last(where: { $0.minuteOfDay <= minuteOfDay }) ?? last
        return entry.rate
    }
}
