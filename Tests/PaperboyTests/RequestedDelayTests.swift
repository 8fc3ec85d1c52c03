import Foundation
import Testing
import Paperboy

/// The one boundary for delays a source asks for: 0 to a day, NaN and negatives dropped.
@Suite(.timeLimit(.minutes(1)))
struct RequestedDelayTests {
    static let day = Duration.seconds(86_400)

    @Test(arguments: [
        (0, .zero), (-0.0, .zero), (1e-300, .milliseconds(1)), (0.0001, .milliseconds(1)), (2.5, .milliseconds(2500)),
        (3600, .seconds(3600)), (86_400, day), (86_400.001, day), (1e300, day), (.infinity, day), (Double(Int64.max), day),
        (-1, nil), (-1e-300, nil), (-.infinity, nil), (.nan, nil), (-.nan, nil),
    ] as [(Double, Duration?)])
    func seconds(_ value: Double, _ delay: Duration?) {
        #expect(RequestedDelay.seconds(value) == delay, "\(value)")
        // The transports' spelling is the same function.
        #expect(TransportError.retryAfter(seconds: value) == delay, "\(value)")
    }

    @Test(arguments: [
        ("0", .zero), ("120", .seconds(120)), ("0086400", day), ("86401", day), ("9223372036854775807", day),
        (String(repeating: "9", count: 10_000), day),
        ("", nil), ("+5", nil), ("-5", nil), (" 5", nil), ("5 ", nil), ("1e3", nil), ("5.0", nil), ("٥", nil),
    ] as [(String, Duration?)])
    func digits(_ text: String, _ delay: Duration?) {
        #expect(RequestedDelay.digits(text) == delay, "\(text.prefix(30))")
    }

    @Test func anHTTPDateInThePastIsNoDelayAndOneFarAwayIsADay() {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        #expect(RequestedDelay.until(now.addingTimeInterval(-3600), from: now) == .zero)
        #expect(RequestedDelay.until(now.addingTimeInterval(90), from: now) == .seconds(90))
        #expect(RequestedDelay.until(.distantFuture, from: now) == Self.day)
        #expect(RequestedDelay.max == Self.day && TransportError.maxRetryAfter == Self.day)
    }
}
