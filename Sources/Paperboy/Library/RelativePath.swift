import Foundation

/// A path inside an issue's folder: where a downloaded file or an archive entry lands.
///
/// The one rule for such paths. Every door that takes one checks it here, once, where the value
/// enters, and reports the problem in its own terms, naming itself and the value: a catalog (as
/// a catalog error naming the feed and the JSON path), the configuration (file, line, key),
/// `paperboy add --path`, the daemon's `ADDASSET`, ``AssetRequest/destinationPath`` when an asset
/// is added, archive entries before anything is unpacked, and the library's rows read back.
///
/// Refused: an empty path; NUL, tab, line breaks and the other C0 and C1 controls, DEL and the
/// bidi controls (the characters Paperboy escapes before it shows text on a terminal); more than
/// 4096 bytes (Linux's `PATH_MAX`); a leading `/` (absolute) or a first component `~` (not the
/// home folder here); a `\` (Windows reads it as `/`); a `..`, `.` or empty component (`a/../b`,
/// `./a`, `a//b`, `a/`); a component longer than 255 bytes (`NAME_MAX`); a component whose
/// Unicode compatibility form holds a `/` or `\` or is only dots and spaces (`‥`, `．．`, `／`,
/// `...`, `" "`).
public struct RelativePath: Sendable, Hashable, CustomStringConvertible {
    /// The path, as written (`/`-separated).
    public let text: String

    /// The longest path, in UTF-8 bytes (Linux's `PATH_MAX`).
    public static let maxBytes = 4096
    /// The longest component (and issue name), in UTF-8 bytes (Linux's `NAME_MAX`).
    public static let maxComponentBytes = 255

    /// Checks `text` for the door named `door` (`"destination path"`, `"ADDASSET destination_path"`).
    ///
    /// - Throws: ``LibraryError`` `.invalidPath` whose message is the door, then the path and
    ///   what is wrong with it (``problem(with:)``).
    public init(_ text: String, door: String) throws(LibraryError) {
        if let problem = Self.problem(with: text) { throw LibraryError(.invalidPath, "\(door) \(problem)") }
        self.text = text
    }

    /// Why `text` cannot be a path inside an issue folder (`"'../x' must not contain '..'"`,
    /// the path quoted with its control characters escaped), or `nil` when it can. Doors with
    /// their own error type (catalogs, the configuration) put this text in it.
    public static func problem(with text: String) -> String? {
        if text.isEmpty { return "is empty" }
        // Quoted only for a message (escaping costs more than the checks).
        var shown: String { quoted(text) }
        if text.unicodeScalars.contains(where: isRefusedCharacter) { return "\(shown) \(controlProblem)" }
        if text.utf8.count > maxBytes { return "is \(text.utf8.count) bytes long; the limit is \(maxBytes)" }
        if text.hasPrefix("/") { return "\(shown) is absolute; it must be relative to the issue folder" }
        if LookAlikes.holds(text, UInt8(ascii: "\\")) { return "\(shown) must not contain '\\' (Windows reads it as '/')" }
        let components = text.split(separator: "/", omittingEmptySubsequences: false)
        if components.contains("..") { return "\(shown) must not contain '..'" }
        if components[0] == "~" { return "\(shown) must be relative to the issue folder ('~' is not the home folder here)" }
        for component in components {
            if let problem = componentProblem(component) { return "\(shown) \(problem)" }
        }
        return nil
    }

    public var description: String { text }

    /// Why one component (a file or folder name) cannot be one, or `nil`.
    private static func componentProblem(_ component: Substring) -> String? {
        if component.isEmpty { return "has an empty component ('//', or a '/' at the end)" }
        if component == "." { return "has a '.' component" }
        if component.utf8.count > maxComponentBytes {
            return "has a component of \(component.utf8.count) bytes; the limit is \(maxComponentBytes)"
        }
        let folded = LookAlikes.folded(component)
        if LookAlikes.holdsASeparator(folded) { return "has a component holding a Unicode look-alike of '/' or '\\' ('\(component)')" }
        if LookAlikes.isOnlyDotsAndSpaces(folded) {
            return "has a component of only dots and spaces, or look-alikes of them ('\(component)')"
        }
        return nil
    }

    // Shared with ``IssueName``, which is one component with rules of its own.

    /// What a refused character is called in messages.
    static let controlProblem = "must not contain NUL, control or bidi characters"

    /// NUL, tab, line breaks (U+2028 and U+2029 too), the other C0 and C1 controls, DEL and the bidi
    /// controls: what ``TerminalText`` escapes.
    static func isRefusedCharacter(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || TerminalText.needsEscape(scalar)
    }

    /// `text` between quotes, its control characters written as `\u{…}` escapes.
    static func quoted(_ text: String) -> String {
        "'" + TerminalText.escape(text).replacingOccurrences(of: "\t", with: "\\u{9}") + "'"
    }
}
