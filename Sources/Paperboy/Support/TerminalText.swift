/// Text from outside (servers, helpers, catalogs, file names) made safe to show on a terminal.
///
/// A server's reason phrase, a helper's `ERROR` message or a catalog's file name may hold
/// escape sequences that retitle the window, move the cursor, hide text or reorder it (bidi
/// overrides). ``escape(_:keepingNewlines:)`` writes each such character as `\u{HEX}`, the way
/// Swift spells it, and leaves every printable character (accents, CJK, emoji) as it is.
package enum TerminalText {
    /// `text` with control characters written as `\u{1B}`: C0 controls (tab kept; newlines kept
    /// when `keepingNewlines`), DEL, C1 controls (U+0080–U+009F), the line and paragraph
    /// separators U+2028 and U+2029 (a line break to log readers, not to a terminal), and the
    /// bidi controls U+061C, U+200E, U+200F, U+202A–U+202E and U+2066–U+2069.
    ///
    /// A backslash is left alone, so escaping twice changes nothing more.
    package static func escape(_ text: some StringProtocol, keepingNewlines: Bool = false) -> String {
        let scalars = text.unicodeScalars
        guard scalars.contains(where: { needsEscape($0, keepingNewlines: keepingNewlines) }) else { return String(text) }
        var escaped = String.UnicodeScalarView()
        for scalar in scalars {
            if needsEscape(scalar, keepingNewlines: keepingNewlines) {
                escaped.append(contentsOf: "\\u{\(String(scalar.value, radix: 16, uppercase: true))}".unicodeScalars)
            } else {
                escaped.append(scalar)
            }
        }
        return String(escaped)
    }

    /// Whether `scalar` is one of the characters ``escape(_:keepingNewlines:)`` rewrites.
    package static func needsEscape(_ scalar: Unicode.Scalar, keepingNewlines: Bool = false) -> Bool {
        switch scalar.value {
        case 0x09: return false
        case 0x0A: return !keepingNewlines
        case 0x00...0x1F, 0x7F...0x9F: return true
        case 0x2028, 0x2029: return true
        case 0x061C, 0x200E, 0x200F, 0x202A...0x202E, 0x2066...0x2069: return true
        default: return false
        }
    }
}
