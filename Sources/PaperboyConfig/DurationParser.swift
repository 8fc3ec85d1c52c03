import Foundation

/// Reads and writes durations such as `250ms`, `1s`, `5m`, `24h` and `1h30m`.
///
/// A duration is one or more whole numbers, each followed by a unit, largest unit first and
/// each unit at most once: `h` (hours), `m` (minutes), `s` (seconds), `ms` (milliseconds).
public enum DurationParser {
    private static let units: [(name: String, milliseconds: Int64)] = [
        ("h", 3_600_000), ("m", 60_000), ("s", 1_000), ("ms", 1),
    ]

    /// Parses a duration such as `1h30m`.
    ///
    /// - Throws: ``ConfigValueError`` when the text is not a duration.
    public static func parse(_ text: String) throws(ConfigValueError) -> Duration {
        let chars = Array(text.trimmingCharacters(in: .whitespaces))
        guard !chars.isEmpty else { throw ConfigValueError(syntaxMessage(text)) }
        var index = 0
        var total: Int64 = 0
        var lastUnitRank = -1
        while index < chars.count {
            var digits = ""
            while index < chars.count, chars[index].isASCII, chars[index].isNumber {
                digits.append(chars[index])
                index += 1
            }
            var unitName = ""
            while index < chars.count, chars[index].isASCII, chars[index].isLetter {
                unitName.append(chars[index])
                index += 1
            }
            guard !digits.isEmpty, let amount = Int64(digits),
                  let rank = units.firstIndex(where: { $0.name == unitName })
            else {
                throw ConfigValueError(syntaxMessage(text))
            }
            guard rank > lastUnitRank else {
                throw ConfigValueError("units must go from largest to smallest, each at most once, got \"\(text)\"")
            }
            lastUnitRank = rank
            let (product, overflow1) = amount.multipliedReportingOverflow(by: units[rank].milliseconds)
            let (sum, overflow2) = total.addingReportingOverflow(product)
            guard !overflow1, !overflow2 else { throw ConfigValueError("duration \"\(text)\" is too long") }
            total = sum
        }
        return .milliseconds(total)
    }

    /// Formats a duration in the syntax ``parse(_:)`` reads, such as `1h30m` or `250ms`.
    public static func string(for duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        var milliseconds = seconds * 1_000 + attoseconds / 1_000_000_000_000_000
        if milliseconds == 0 { return "0s" }
        var text = milliseconds < 0 ? "-" : ""
        milliseconds = abs(milliseconds)
        for (name, size) in units where milliseconds >= size {
            text += "\(milliseconds / size)\(name)"
            milliseconds %= size
        }
        return text
    }

    private static func syntaxMessage(_ text: String) -> String {
        "expected a duration like \"250ms\", \"30s\", \"5m\", \"24h\" or \"1h30m\", got \"\(text)\""
    }
}
