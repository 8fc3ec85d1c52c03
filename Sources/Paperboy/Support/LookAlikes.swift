import Foundation

/// Text as a Unicode compatibility mapping reads it: what some servers (IIS) and file systems
/// reached through Windows (best-fit mapping) see in place of what was written.
///
/// The one place for the folding that both URL paths (``NormalizedPath``) and the names and
/// paths that become files (``IssueName``, ``RelativePath``) refuse by: `‥` is `..`, `．` and
/// `。` are `.`, `／` is `/`, a no-break or ideographic space is a space.
enum LookAlikes {
    /// `text` in Unicode compatibility form (NFKC), with the ideographic full stops (`。`, `｡`)
    /// as `.`; ASCII text is returned as it is (compatibility forms only change text outside it).
    static func folded(_ text: some StringProtocol) -> String {
        if text.utf8.allSatisfy({ $0 < 0x80 }) { return String(text) }
        return String(text).precomposedStringWithCompatibilityMapping
            .replacingOccurrences(of: "\u{3002}", with: ".").replacingOccurrences(of: "\u{FF61}", with: ".")
    }

    /// Whether folded text is not empty and only dots and spaces: what Windows trims to `.`, `..`
    /// or nothing.
    static func isOnlyDotsAndSpaces(_ folded: String) -> Bool {
        !folded.isEmpty && folded.allSatisfy { $0 == "." || $0 == " " }
    }

    /// Whether folded text holds a `/` or a `\`.
    static func holdsASeparator(_ folded: String) -> Bool {
        holds(folded, UInt8(ascii: "/")) || holds(folded, UInt8(ascii: "\\"))
    }

    /// Whether `text` holds the ASCII character `ascii`, as Foundation's `contains` finds it.
    /// ASCII text holds no combining mark: its bytes are searched, a tenth of the time.
    static func holds(_ text: String, _ ascii: UInt8) -> Bool {
        if text.utf8.allSatisfy({ $0 < 0x80 }) { return text.utf8.contains(ascii) }
        return text.contains(String(Unicode.Scalar(ascii)))
    }
}
