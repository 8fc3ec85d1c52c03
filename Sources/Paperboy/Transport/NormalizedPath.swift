import Foundation

/// A URL's path in the normal form of RFC 3986 §6.2.2, as a server reads it, or the reason
/// servers may read it differently (``AmbiguousPath``).
///
/// Normalizing:
/// - a percent-escape of an unreserved character (`A`–`Z`, `a`–`z`, `0`–`9`, `-._~`) is the
///   character (`%2e` is `.`, `%7E` is `~`), every other escape is written in uppercase hex, and
///   bytes that may not stand in a path (outside ASCII, `"`, `|`, …) are escaped (`ü` is `%C3%BC`);
/// - `.` and `..` segments are resolved, encoded ones included (`%2e%2e`, `.%2E`), and `..`
///   at the root stays at the root;
/// - empty segments (`//`) are dropped, as nginx merges slashes, unless a `..` would remove
///   one: `/a//../b` is `/a/b` to RFC 3986 and `/b` to nginx;
/// - `;params` stay part of their segment, so `/a;v=1` is not `/a`.
///
/// Refused, because servers read them differently (some decoding again, some taking `\` for
/// `/`, Tomcat dropping `;params`, IIS folding Unicode compatibility forms and trailing dots):
/// an encoded `/` or `\` (`%2F`, `%5C`), a literal `\`, an escape that decodes to another
/// escape (`%252e`), a `%` not followed by two hex digits, a control byte (`%00`, `%0A`), a
/// dot segment with parameters (`..;x`, `.;`), a segment of only dots and spaces other than `.`
/// and `..` (`...`, `.. `, `%20`), and a segment whose Unicode compatibility form is such dots
/// or holds a slash (`‥`, `．．`, `。。`, `／`).
package struct NormalizedPath: Sendable, Hashable, CustomStringConvertible {
    /// The normalized path: `/` alone, or `/`-separated segments, with a trailing `/` when
    /// the path had one.
    package let text: String

    /// The normal form of `url`'s path (`/` for an empty path).
    ///
    /// - Throws: ``AmbiguousPath`` when servers may read the path differently.
    package init(_ url: URL) throws(AmbiguousPath) {
        try self.init(percentEncoded: url.absoluteURL.path(percentEncoded: true))
    }

    /// The normal form of `path`, a URL path as written in a request (percent-encoded).
    ///
    /// - Throws: ``AmbiguousPath`` when servers may read the path differently.
    package init(percentEncoded path: String) throws(AmbiguousPath) {
        let pieces = path.utf8.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false)
        // A rootless path (only in hand-made URLs) is read from the root, as a server would.
        let relative = path.utf8.first == UInt8(ascii: "/") ? pieces.dropFirst() : pieces[...]
        // Empty segments are kept until the end, so that a `..` removing one is seen.
        var stack: [String] = []
        var endsInFolder = false
        for (index, piece) in zip(relative.indices, relative) {
            let isLast = index == relative.index(before: relative.endIndex)
            switch try Self.segment(piece) {
            case .empty:
                if isLast { endsInFolder = true } else { stack.append("") }
            case .current:
                endsInFolder = isLast
            case .parent:
                if stack.last == "" {
                    throw AmbiguousPath(path, "`..` after an empty segment (`//`) climbs one level more on servers that merge slashes")
                }
                if !stack.isEmpty { stack.removeLast() }
                endsInFolder = isLast
            case .name(let name):
                stack.append(name)
                endsInFolder = false
            }
        }
        let names = stack.filter { !$0.isEmpty }
        text = names.isEmpty ? "/" : "/" + names.joined(separator: "/") + (endsInFolder ? "/" : "")
    }

    package var description: String { text }

    /// Whether this path is `folder` or under it, on a `/` boundary; `folder` is a normalized
    /// path without its trailing `/` (empty for the root).
    package func isWithin(_ folder: String) -> Bool {
        guard text.hasPrefix(folder) else { return false }
        let rest = text.dropFirst(folder.count)
        return rest.isEmpty || rest.hasPrefix("/")
    }

    private enum Segment {
        case empty, current, parent
        case name(String)
    }

    private static let hexDigits = Array("0123456789ABCDEF".utf8)

    /// One segment in normal form, or why it is ambiguous.
    private static func segment(_ piece: Substring.UTF8View) throws(AmbiguousPath) -> Segment {
        var normal: [UInt8] = []
        var decoded: [UInt8] = []
        var index = piece.startIndex
        func refuse(_ reason: String) -> AmbiguousPath { AmbiguousPath(String(decoding: piece, as: UTF8.self), reason) }
        while index < piece.endIndex {
            let byte = piece[index]
            if byte == UInt8(ascii: "%") {
                guard let high = piece.index(index, offsetBy: 1, limitedBy: piece.endIndex), high < piece.endIndex,
                      let low = piece.index(high, offsetBy: 1, limitedBy: piece.endIndex), low < piece.endIndex,
                      let value = hex(piece[high], piece[low]) else {
                    throw refuse("a `%` not followed by two hex digits")
                }
                switch value {
                case UInt8(ascii: "/"): throw refuse("an encoded `/` (%2F)")
                case UInt8(ascii: "\\"): throw refuse("an encoded `\\` (%5C)")
                case 0..<0x20, 0x7F: throw refuse("an encoded control character")
                case _ where isUnreserved(value): normal.append(value)
                default: normal += [UInt8(ascii: "%"), hexDigits[Int(value >> 4)], hexDigits[Int(value & 0xF)]]
                }
                decoded.append(value)
                index = piece.index(low, offsetBy: 1)
                continue
            }
            switch byte {
            case UInt8(ascii: "\\"): throw refuse("a `\\`, which some servers read as `/`")
            case 0..<0x21, 0x7F: throw refuse("a space or control character")
            case _ where isPathCharacter(byte): normal.append(byte)
            default: normal += [UInt8(ascii: "%"), hexDigits[Int(byte >> 4)], hexDigits[Int(byte & 0xF)]]
            }
            decoded.append(byte)
            index = piece.index(after: index)
        }
        let text = String(decoding: normal, as: UTF8.self)
        switch text {
        case "": return .empty
        case ".": return .current
        case "..": return .parent
        default: break
        }
        if containsEscapedEscape(normal) { throw refuse("an escape that decodes to another escape (double encoding)") }
        let readable = String(decoding: decoded, as: UTF8.self)
        let bare = readable.prefix { $0 != ";" }
        if bare == "." || bare == ".." { throw refuse("a dot segment with ;parameters, which Tomcat reads as `\(bare)`") }
        let folded = LookAlikes.folded(bare)
        if LookAlikes.holdsASeparator(folded) { throw refuse("a Unicode look-alike of `/` or `\\`") }
        if LookAlikes.isOnlyDotsAndSpaces(folded) {
            throw refuse("only dots (or look-alikes) and spaces, which Windows servers trim to `.`, `..` or nothing")
        }
        return .name(text)
    }

    private static func hex(_ high: UInt8, _ low: UInt8) -> UInt8? {
        guard let high = hexValue(high), let low = hexValue(low) else { return nil }
        return high << 4 | low
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    private static func isUnreserved(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            true
        default:
            byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "~")
        }
    }

    /// Whether `byte` may stand unescaped in a path segment (RFC 3986 `pchar` without escapes).
    private static func isPathCharacter(_ byte: UInt8) -> Bool {
        isUnreserved(byte) || "!$&'()*+,;=:@".utf8.contains(byte)
    }

    /// Whether normalized bytes hold `%25` followed by two hex digits: a `%XX` once decoded.
    private static func containsEscapedEscape(_ normal: [UInt8]) -> Bool {
        guard normal.count >= 5 else { return false }
        for start in 0...(normal.count - 5)
        where normal[start] == UInt8(ascii: "%") && normal[start + 1] == UInt8(ascii: "2") && normal[start + 2] == UInt8(ascii: "5")
            && hexValue(normal[start + 3]) != nil && hexValue(normal[start + 4]) != nil {
            return true
        }
        return false
    }
}

/// A URL path that servers may read differently, and why; such a path never matches a
/// ``URLScope`` with a path.
package struct AmbiguousPath: Error, Sendable, CustomStringConvertible {
    /// The path or segment, as written.
    package var spelling: String
    /// What makes it ambiguous.
    package var reason: String

    package init(_ spelling: String, _ reason: String) {
        self.spelling = spelling
        self.reason = reason
    }

    package var description: String { "'\(spelling)' has \(reason)" }
}
