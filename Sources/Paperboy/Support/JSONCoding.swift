import Foundation

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
            decoder.keyDecodingStrategy = .convertFromSnakeCase
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
