import Foundation

/// An issue's name: unique in its library, and the name of its folder there.
///
/// The one rule for issue names. Every door that takes one checks it here, once, where the value
/// enters, and reports the problem in its own terms, naming itself and the value: a catalog (as a
/// catalog error naming the feed and the JSON path), the configuration (file, line, key),
/// `paperboy add --issue`, ``Library/addIssue(name:date:)``, the daemon's `ADDISSUE`, and the
/// library's rows read back (a name `..` would be the library folder itself).
///
/// Refused: an empty name; a leading `.` (`.`, `..`, hidden folders); a `/` or `\`; NUL, tab,
/// line breaks and the other C0 and C1 controls, DEL and the bidi controls; more than 255 bytes
/// (Linux's `NAME_MAX`); a name whose Unicode compatibility form starts with `.`, holds a `/` or
/// `\`, or is only spaces (`‥`, `．x`, `a／b`, `" "`, a no-break space).
public struct IssueName: Sendable, Hashable, CustomStringConvertible {
    /// The name, as written.
    public let text: String

    /// Checks `text` for the door named `door` (`"issue name"`, `"ADDISSUE name"`).
    ///
    /// - Throws: ``LibraryError`` `.invalidIssueName` whose message is the door, then the name
    ///   and what is wrong with it (``problem(with:)``).
    public init(_ text: String, door: String) throws(LibraryError) {
        if let problem = Self.problem(with: text) { throw LibraryError(.invalidIssueName, "\(door) \(problem)") }
        self.text = text
    }

    /// Why `text` cannot be an issue name (`"'..' must not start with '.'"`, the name quoted with
    /// its control characters escaped), or `nil` when it can. Doors with their own error type
    /// (catalogs, the configuration) put this text in it.
    public static func problem(with text: String) -> String? {
        if text.isEmpty { return "is empty" }
        // Quoted only for a message (escaping costs more than the checks).
        var shown: String { RelativePath.quoted(text) }
        if text.hasPrefix(".") { return "\(shown) must not start with '.'" }
        if LookAlikes.holdsASeparator(text) { return "\(shown) must not contain '/' or '\\'" }
        if text.unicodeScalars.contains(where: RelativePath.isRefusedCharacter) {
            return "\(shown) \(RelativePath.controlProblem)"
        }
        let limit = RelativePath.maxComponentBytes
        if text.utf8.count > limit { return "is \(text.utf8.count) bytes long; the limit is \(limit)" }
        let folded = LookAlikes.folded(text)
        if folded.hasPrefix(".") { return "\(shown) must not start with a Unicode look-alike of '.'" }
        if LookAlikes.holdsASeparator(folded) { return "\(shown) must not contain a Unicode look-alike of '/' or '\\'" }
        if LookAlikes.isOnlyDotsAndSpaces(folded) { return "\(shown) is only spaces" }
        return nil
    }

    public var description: String { text }
}
