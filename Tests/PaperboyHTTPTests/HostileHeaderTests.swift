import Foundation
import Paperboy
@testable import PaperboyHTTP
import PaperboyTestServers
import PaperboyTesting
import Testing

/// Servers' numbers are range-checked: Content-Length, Content-Range and Retry-After.
@Suite("HTTP headers from a hostile server", .timeLimit(.minutes(1)))
struct HostileHeaderTests {
    let url = URL(string: "http://127.0.0.1/f")!

    func head(_ status: Int, _ fields: [(String, String)]) -> ResponseHead {
        ResponseHead(status: status, fields: fields)
    }

    @Test func contentRangeEndingAtInt64MaxIsRefusedNotATrap() {
        let hostile = head(206, [("content-range", "bytes 5-9223372036854775807/*")])
        #expect(throws: TransportError.self) { try RangeResume.response(for: hostile, requestedOffset: 5, url: url) }
    }

    @Test func contentRangeWithATotalBelowItsEndIsRefused() {
        for value in ["bytes 5-10/7", "bytes 5-10/10", "bytes 5-10/-9223372036854775808", "bytes 10-5/20", "bytes -5-10/20",
                      "bytes +5-10/20", "bytes 5-10/+20", "bytes 5- 10/20"] {
            #expect(RangeResume.contentRange(of: head(206, [("content-range", value)])) == nil, "\(value)")
        }
        let good = RangeResume.contentRange(of: head(206, [("content-range", "bytes 5-10/11")]))
        #expect(good?.start == 5 && good?.end == 10 && good?.total == 11)
    }

    @Test func negativeOrSignedLengthsAreNotLengths() {
        for value in ["-5", "+5", "-9223372036854775808", "99999999999999999999", "5 5", "", "0x10"] {
            #expect(head(200, [("content-length", value)]).contentLength == nil, "\(value)")
        }
        #expect(head(200, [("content-length", "12")]).contentLength == 12)
        #expect(RangeResume.unsatisfiedLength(of: head(416, [("content-range", "bytes */-3")])) == nil)
    }

    @Test func retryAfterIsClampedToADay() {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        #expect(TransportError.parseRetryAfter("99999999999999999999", now: now) == TransportError.maxRetryAfter)
        #expect(TransportError.parseRetryAfter("9223372036854775807", now: now) == TransportError.maxRetryAfter)
        #expect(TransportError.parseRetryAfter("Fri, 31 Dec 9999 23:59:59 GMT", now: now) == TransportError.maxRetryAfter)
        #expect(TransportError.parseRetryAfter("-5", now: now) == nil)
        #expect(TransportError.parseRetryAfter("1e300", now: now) == nil)
        #expect(TransportError.parseRetryAfter("120", now: now) == .seconds(120))
        #expect(TransportError.parseRetryAfter("Thu, 01 Jan 1970 00:00:00 GMT", now: now) == .zero)
    }

    /// Found by `scripts/fuzz headers`: every header line is first tried as a status line, so a
    /// field such as `HTTP/2ter: 9555…` (or a status line) with more digits than an `Int` holds
    /// trapped on overflow. A status code is three digits; anything longer is not a status line.
    /// Found by `scripts/fuzz headers`: DateFormatter trapped ("Incorrect range") on this
    /// `Retry-After` of a 500, so one header could end the process.
    @Test func aRetryAfterDateWithNonASCIIIsIgnoredNotATrap() {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        #expect(TransportError.parseRetryAfter("Sunday, 06\u{731}ov-94 08:49:999GMT", now: now) == nil)
        #expect(TransportError.parseRetryAfter("Sun, 06 Nov 1994 08:49:37 GMT\u{0}", now: now) == nil)
        #expect(TransportError.parseRetryAfter(String(repeating: "Sun, ", count: 40), now: now) == nil)
        // A well-formed date still counts (in the past: no delay).
        #expect(TransportError.parseRetryAfter("Sun, 06 Nov 1994 08:49:37 GMT", now: now) == .zero)
    }

    @Test func aLineStartingWithHTTPAndManyDigitsIsNotAStatusLine() {
        func status(_ line: String) -> Int? { Array(line.utf8).withUnsafeBytes { ResponseHead.statusCode(ofStatusLine: $0) } }
        #expect(status("HTTP/2ter: 95555555555555555555555559999299999") == nil)
        #expect(status("HTTP/1.1 99999999999999999999 OK") == nil)
        #expect(status("HTTP/1.1 2000 OK") == nil)
        #expect(status("HTTP/1.1 206 Partial Content") == 206)
        #expect(status("HTTP/2 200") == 200)
    }

    /// Thousands of random and mutated header values through every parser: no trap, and only
    /// values in range come out. Seconds of parsing: a thread of its own, not the pool's.
    @Test func mutatedHeaderValuesNeverTrap() async throws {
        let seed: UInt64 = 0x4EAD_E125_0015
        let failures = try await offThePool { Self.fuzz(seed: seed, rounds: 3000) }
        #expect(failures.isEmpty, "seed \(seed): \(failures.count) failure(s), first: \(failures.prefix(3))")
    }

    /// What `mutatedHeaderValuesNeverTrap` checks, round by round; the broken promises.
    static func fuzz(seed: UInt64, rounds: Int) -> [String] {
        let url = URL(string: "http://127.0.0.1/f")!
        var random = SplitMix64(seed: seed)
        var failures: [String] = []
        func expect(_ condition: Bool, _ what: @autoclosure () -> String) {
            if !condition { failures.append(what()) }
        }
        let pieces = ["bytes ", "0", "5", "-", "/", "*", "9223372036854775807", "9223372036854775808", "-9223372036854775808",
                      "4611686018427387904", "99999999999999999999", " ", "+", "e300", "Fri, 31 Dec 9999 23:59:59 GMT",
                      "Sun, 06 Nov 1994 08:49:37 GMT", "\u{0}", "\u{1B}"]
        for round in 0..<rounds {
            let value = (0..<Int.random(in: 1...6, using: &random)).map { _ in pieces.randomElement(using: &random)! }.joined()
            let status = [200, 206, 416, 503].randomElement(using: &random)!
            let offset = [0, 5, 1 << 40, Int64.max].randomElement(using: &random)!
            let hostile = ResponseHead(status: status, fields: [("content-range", value), ("content-length", value), ("retry-after", value)])
            if let length = hostile.contentLength { expect((0...ByteCount.max).contains(length), "round \(round): length \(length) of \(value)") }
            if let range = RangeResume.contentRange(of: hostile) {
                expect(0 <= range.start && range.start <= range.end && range.end < (range.total ?? .max), "round \(round): range \(range) of \(value)")
            }
            _ = RangeResume.unsatisfiedLength(of: hostile)
            if let response = try? RangeResume.response(for: hostile, requestedOffset: offset, url: url) {
                expect(response.offset >= 0 && (response.expectedLength ?? 0) >= 0, "round \(round): response \(response) to \(value)")
            }
            if let delay = TransportError.parseRetryAfter(value) {
                expect(delay >= .zero && delay <= TransportError.maxRetryAfter, "round \(round): Retry-After \(delay) of \(value)")
            }
            let error = TransportError.http(hostile, url: url)
            expect((error.retryAfter ?? .zero) <= TransportError.maxRetryAfter, "round \(round): retryAfter \(String(describing: error.retryAfter)) of \(value)")
        }
        return failures
    }
}
