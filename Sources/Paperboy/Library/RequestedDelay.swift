import Foundation

/// A delay a source asked for before the next attempt (HTTP `Retry-After`, a helper's
/// `retry_after`): the one boundary for durations from outside.
///
/// Whatever form it arrives in, a requested delay is made safe here: from 0 to ``max`` (a day;
/// longer requests, infinity and `1e300` included, are clamped to it), to the millisecond
/// rounded up, and dropped (`nil`) when it is not a number or is negative. Transports call it
/// through ``TransportError/retryAfter(seconds:)`` or directly; the retry policy then caps
/// the wait again, at an hour.
public enum RequestedDelay {
    /// The longest delay a source may ask for: one day.
    public static let max: Duration = .seconds(86_400)

    /// A delay of `seconds`: `nil` for NaN and negatives, at most ``max``.
    public static func seconds(_ seconds: Double) -> Duration? {
        guard seconds >= 0 else { return nil }  // also false for NaN
        let limit = Double(max.components.seconds)
        return .milliseconds(Int64((min(seconds, limit) * 1000).rounded(.up)))
    }

    /// A delay written as decimal digits only (`Retry-After: 120`): more digits than an `Int64`
    /// holds is still "a very long time", clamped to ``max``; `nil` for anything but digits
    /// (a sign, a space, an exponent, a fraction).
    public static func digits(_ text: some StringProtocol) -> Duration? {
        ByteCount.digitsValue(text.utf8).flatMap { seconds(Double($0)) }
    }

    /// The delay until `date` (an HTTP-date), seen at `now`: a date in the past is no delay.
    public static func until(_ date: Date, from now: Date) -> Duration? {
        let interval = date.timeIntervalSince(now)
        return seconds(interval.isNaN ? interval : Swift.max(0, interval))
    }
}
