import Foundation
import Synchronization

/// The package's JSON coder set-ups, each made once, so that a file, a frame or a document keeps
/// its bytes whichever door writes it. JSON from outside the process is still read through
/// ``JSONReader`` (its limits first), with one of these decoders.
///
/// | preset | keys | dates | layout | used for |
/// | --- | --- | --- | --- | --- |
/// | ``plain`` | as declared | Foundation's | compact, `/` escaped | `daemon.json`, `daemon-claims.json`, `purged-issues.json`, the limiter's statistics |
/// | ``stored`` | as declared | Foundation's | compact, sorted | the store's JSON columns (headers, options) |
/// | ``helperWire`` | snake_case | Foundation's | compact, sorted, `/` as is | the transport protocol (docs/WritingTransports.md) |
/// | ``daemonWire`` | snake_case | UTC, to the millisecond; read by ``LibraryDate/parse(_:)`` | compact, sorted, `/` as is | the daemon protocol (docs/Daemon.md) |
/// | ``feedSchedule`` | snake_case | ISO 8601 | indented, sorted | `feed-schedule.json` |
/// | ``document`` | as declared | Foundation's | indented, sorted, `/` as is | documents printed for people and scripts (`--json`) |
///
/// snake_case keys are read with Foundation's conversion, remembered per key (``SnakeCaseKeys``).
package struct JSONCoding: Sendable {
    package let encoder: JSONEncoder
    package let decoder: JSONDecoder

    /// How dates are written and read.
    private enum Dates {
        case foundation, iso8601, library
    }

    private init(snakeCase: Bool = false, dates: Dates = .foundation, layout: JSONEncoder.OutputFormatting = []) {
        let encoder = JSONEncoder()
        let decoder = JSONDecoder()
        if snakeCase {
            encoder.keyEncodingStrategy = .convertToSnakeCase
            decoder.keyDecodingStrategy = SnakeCaseKeys.shared.strategy
        }
        switch dates {
        case .foundation:
            break
        case .iso8601:
            encoder.dateEncodingStrategy = .iso8601
            decoder.dateDecodingStrategy = .iso8601
        case .library:
            // In UTC, to the millisecond as the library records dates, in the calendar
            // ``LibraryDate/parse(_:)`` reads (Foundation's `.iso8601` writes dates before 1582 in
            // the Julian calendar).
            encoder.dateEncodingStrategy = .custom { date, encoder in
                var container = encoder.singleValueContainer()
                try container.encode(LibraryDate.utcMillisecondText(date))
            }
            decoder.dateDecodingStrategy = .custom(Self.decodeLibraryDate)
        }
        encoder.outputFormatting = layout
        self.encoder = encoder
        self.decoder = decoder
    }

    /// Foundation's defaults: keys in declaration order, `/` escaped.
    package static let plain = JSONCoding()
    /// Keys sorted, so that equal values are equal text.
    package static let stored = JSONCoding(layout: .sortedKeys)
    /// The transport protocol's messages.
    package static let helperWire = JSONCoding(snakeCase: true, layout: [.sortedKeys, .withoutEscapingSlashes])
    /// The daemon protocol's messages.
    package static let daemonWire = JSONCoding(snakeCase: true, dates: .library, layout: [.sortedKeys, .withoutEscapingSlashes])
    /// `feed-schedule.json`.
    package static let feedSchedule = JSONCoding(snakeCase: true, dates: .iso8601, layout: [.sortedKeys, .prettyPrinted])
    /// A document for people and scripts.
    package static let document = JSONCoding(layout: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])

    /// A date field: what ``LibraryDate/parse(_:)`` reads (a date `2026-11-21`, midnight UTC, or
    /// an ISO 8601 / RFC 3339 date-time with an offset, fractional seconds allowed), or
    /// `dataCorrupted` at the field saying what was expected. The range of years is
    /// ``LibraryDate``'s, checked where the date is used.
    private static func decodeLibraryDate(_ decoder: any Decoder) throws -> Date {
        let container = try decoder.singleValueContainer()
        if let text = try? container.decode(String.self), let date = LibraryDate.parse(text) { return date }
        let got = (try? container.decode(JSONValue.self))?.shown ?? "?"
        throw DecodingError.dataCorrupted(.init(
            codingPath: decoder.codingPath,
            debugDescription: "expected an ISO 8601 date (2026-11-21, midnight UTC) or date-time with an offset "
                + "(2026-11-21T06:00:00Z), got \(got)"))
    }
}

extension JSONValue {
    /// The value as a message shows it: JSON of at most 64 characters, or `an object`, `an array`.
    package var shown: String {
        switch self {
        case .array: "an array"
        case .object: "an object"
        case .number(let number) where number.rounded() == number && abs(number) < 9.2e18: Self.shown(String(Int64(number)))
        case .number(let number): Self.shown(String(number))
        default: Self.shown(String(decoding: (try? JSONCoding.daemonWire.encoder.encode(self)) ?? Data("?".utf8), as: UTF8.self))
        }
    }

    /// `text` as a message shows it: at most 64 characters, then `…`.
    package static func shown(_ text: String) -> String {
        text.count <= 64 ? text : String(text.prefix(64)) + "…"
    }
}

/// Foundation's `convertFromSnakeCase`, with the answers for the keys seen remembered: the
/// conversion ran on every key of every object decoded (half the time a daemon client spent
/// decoding events), while a protocol has a few dozen keys.
///
/// The rule is Foundation's, written out in ``convert(_:)`` (a test compares the two on every
/// key the protocols use and on random ones). What is remembered is bounded: keys come from
/// outside, so only ``maxKeys`` keys of at most ``maxKeyBytes`` bytes are kept, and any other is
/// converted each time, as Foundation does.
package final class SnakeCaseKeys: Sendable {
    package static let shared = SnakeCaseKeys()
    package init() {}
    package static let maxKeys = 1_024
    package static let maxKeyBytes = 64

    private let remembered = Mutex<[String: String]>([:])

    /// The decoding strategy that converts through this cache.
    package var strategy: JSONDecoder.KeyDecodingStrategy {
        .custom { [self] path in Key(converted(path.last?.stringValue ?? "")) }
    }

    /// How many keys are remembered (for tests).
    package var rememberedCount: Int { remembered.withLock { $0.count } }

    /// `key` converted, remembered when there is room.
    package func converted(_ key: String) -> String {
        if let known = remembered.withLock({ $0[key] }) { return known }
        let converted = Self.convert(key)
        if key.utf8.count <= Self.maxKeyBytes {
            remembered.withLock { if $0.count < Self.maxKeys { $0[key] = converted } }
        }
        return converted
    }

    /// Foundation's rule: leading and trailing underscores kept; the words between underscores
    /// joined, the first lowercased, the others capitalized; a key without an inner underscore as it is.
    package static func convert(_ key: String) -> String {
        guard !key.isEmpty, let first = key.firstIndex(where: { $0 != "_" }) else { return key }
        var last = key.index(before: key.endIndex)
        while last > first && key[last] == "_" { key.formIndex(before: &last) }
        let words = key[first...last].split(separator: "_")
        let joined = words.count == 1
            ? String(key[first...last])
            : ([words[0].lowercased()] + words[1...].map { $0.capitalized }).joined()
        return String(key[..<first]) + joined + String(key[key.index(after: last)...])
    }

    private struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(_ stringValue: String) { self.stringValue = stringValue }
        init?(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }
}
