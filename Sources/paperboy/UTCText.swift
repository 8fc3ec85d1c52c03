import Foundation
#if canImport(Glibc)
import Glibc
#endif

extension Date {
    /// `2026-11-21`, the UTC day, as `ISO8601FormatStyle().year().month().day()` writes it.
    var utcDayText: String { utcText(withTime: false) }

    /// `2026-11-21T18:30:05Z`, as `formatted(.iso8601)` writes it.
    var utcTimeText: String { utcText(withTime: true) }

    /// Built with `gmtime_r`: Foundation's format styles load ICU's calendar and zone data
    /// (megabytes of memory and milliseconds at start-up) for text this simple.
    private func utcText(withTime: Bool) -> String {
        let interval = timeIntervalSince1970.rounded(.down)
        guard abs(interval) < 1e15 else { return "\(self)" }  // beyond time_t: Foundation's text
        var seconds = time_t(interval)
        var fields = tm()
        guard gmtime_r(&seconds, &fields) != nil else { return "\(self)" }
        func padded(_ value: Int32, _ width: Int) -> String {
            let digits = String(value)
            return String(repeating: "0", count: max(0, width - digits.count)) + digits
        }
        let day = "\(padded(fields.tm_year + 1900, 4))-\(padded(fields.tm_mon + 1, 2))-\(padded(fields.tm_mday, 2))"
        guard withTime else { return day }
        return day + "T\(padded(fields.tm_hour, 2)):\(padded(fields.tm_min, 2)):\(padded(fields.tm_sec, 2))Z"
    }
}
