import Foundation

/// A time-of-day bandwidth schedule, such as `08:00 1MB/s, 19:00 10MB/s, 23:00 off`.
///
/// Each entry holds from its time until the next one; before the first entry of a day, the
/// last entry of the previous day still holds (the schedule wraps around midnight).
public struct BandwidthSchedule: Sendable, Hashable {
    /// One change of limit.
    public struct Entry: Sendable, Hashable {
        /// Minutes since midnight, 0..<1440.
        public var minuteOfDay: Int
        /// The limit from then on; `nil` is unlimited.
        public var bytesPerSecond: Int64?

        /// Creates an entry.
        public init(minuteOfDay: Int, bytesPerSecond: Int64?) {
            self.minuteOfDay = minuteOfDay
            self.bytesPerSecond = bytesPerSecond
        }
    }

    /// The entries, sorted by time.
    public let entries: [Entry]
    /// The time zone the times are in (the system's by default).
    public var timeZone: TimeZone

    /// Creates a schedule; entries are sorted by time.
    public init(_ entries: [Entry], timeZone: TimeZone = .current) {
        self.entries = entries.sorted { $0.minuteOfDay < $1.minuteOfDay }
        self.timeZone = timeZone
    }

    private var calendar: Calendar {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        return calendar
    }

    private func minuteOfDay(_ date: Date) -> Int {
        let parts = calendar.dateComponents([.hour, .minute], from: date)
        return (parts.hour ?? 0) * 60 + (parts.minute ?? 0)
    }

    /// The limit in force at `date` (`nil`: unlimited; also when the schedule is empty).
    public func bytesPerSecond(at date: Date) -> Int64? {
        guard let last = entries.last else { return nil }
        let minute = minuteOfDay(date)
        return (entries.last { $0.minuteOfDay <= minute } ?? last).bytesPerSecond
    }

    /// The first moment after `date` at which the limit may change, or `nil` for an empty schedule.
    public func nextChange(after date: Date) -> Date? {
        guard let first = entries.first else { return nil }
        let minute = minuteOfDay(date)
        let startOfDay = calendar.startOfDay(for: date)
        if let next = entries.first(where: { $0.minuteOfDay > minute }) {
            return calendar.date(byAdding: .minute, value: next.minuteOfDay, to: startOfDay)
        }
        let tomorrow = calendar.date(byAdding: .day, value: 1, to: startOfDay) ?? startOfDay.addingTimeInterval(86_400)
        return calendar.date(byAdding: .minute, value: first.minuteOfDay, to: tomorrow)
    }
}
