import Foundation
import Testing
@testable import Paperboy

/// Issue 26, "one boundary type per value class": issue names and paths inside an issue folder
/// are checked by ``IssueName`` and ``RelativePath``, and by nothing else. Each row is a spelling
/// and what the one rule says of it: `nil` accepts it, a text is part of the refusal.
///
/// Before, the rule had three copies (the core's, the catalog's and the configuration's) that
/// disagreed: `a//b`, `./a` and 300-byte components were paths to some and not to others, C1
/// controls were refused only by the configuration, `\` only in archives, `..` as an issue name
/// passed the configuration, and bidi controls and look-alikes passed all three.
@Suite("Names and paths", .timeLimit(.minutes(1))) struct NamesAndPathsTests {
    static let issueNames: [(String, String?)] = [
        ("2026-11-21", nil), ("Ausgabe März 2026 — Nº 3", nil), ("日本語の号", nil), ("a.b", nil), ("a..b", nil),
        ("a b", nil), ("trailing.", nil), ("~home", nil), ("📰", nil), (String(repeating: "x", count: 255), nil),
        (String(repeating: "é", count: 127), nil),
        ("", "is empty"),
        (".", "'.' must not start with '.'"), ("..", "'..' must not start with '.'"), (".hidden", "must not start with '.'"),
        ("../up", "must not start with '.'"),
        ("a/b", "'a/b' must not contain '/' or '\\'"), ("/abs", "must not contain '/'"), ("a\\b", "must not contain '/' or '\\'"),
        ("nul\u{0}name", "'nul\\u{0}name' must not contain NUL, control or bidi characters"),
        ("tab\tname", "'tab\\u{9}name' must not contain NUL"), ("line\nbreak", "'line\\u{A}break'"), ("del\u{7F}", "'del\\u{7F}'"),
        ("a\u{85}b", "'a\\u{85}b' must not contain NUL, control or bidi"), ("csi\u{9B}31m", "'csi\\u{9B}31m'"),
        ("\u{202E}fdp.exe", "'\\u{202E}fdp.exe' must not contain NUL, control or bidi"), ("a\u{2066}b", "'a\\u{2066}b'"), ("a\u{2028}b", "'a\\u{2028}b' must not contain NUL, control or bidi"),
        ("a\u{2029}b", "'a\\u{2029}b'"),
        (" ", "is only spaces"), ("   ", "is only spaces"), ("\u{A0}", "is only spaces"), ("\u{3000}", "is only spaces"),
        ("．．", "must not start with a Unicode look-alike of '.'"), ("‥", "look-alike of '.'"), ("。hidden", "look-alike of '.'"),
        ("a／b", "must not contain a Unicode look-alike of '/' or '\\'"), ("a＼b", "look-alike of '/' or '\\'"),
        (String(repeating: "x", count: 256), "is 256 bytes long; the limit is 255"),
        (String(repeating: "é", count: 128), "is 256 bytes long; the limit is 255"),
    ]

    @Test(arguments: issueNames)
    func anIssueNameIsOneRule(_ text: String, _ refusal: String?) {
        expect(text, refusal, problem: IssueName.problem(with: text), made: { () throws(LibraryError) in try IssueName(text, door: "test").text })
    }

    /// The rule's verdict on `text` is `refusal` (`nil`: accepted), and the initializer agrees.
    func expect(_ text: String, _ refusal: String?, problem: String?, made: () throws(LibraryError) -> String) {
        if let refusal {
            #expect(problem?.contains(refusal) == true, "\(text.debugDescription): \(problem ?? "accepted")")
            #expect(throws: LibraryError.self) { try made() }
        } else {
            #expect(problem == nil, "\(text.debugDescription)")
            #expect((try? made()) == text)
        }
    }

    static let relativePaths: [(String, String?)] = [
        ("a.pdf", nil), ("pages/1.pdf", nil), ("a b/c d.pdf", nil), ("a..b", nil), ("...a", nil), (".hidden", nil),
        ("dir/.config", nil), ("~$lock.docx", nil), ("a/~", nil), ("März/Nº 3.pdf", nil), ("日本/語.pdf", nil),
        (String(repeating: "x", count: 255), nil),
        ((1...16).map { _ in String(repeating: "x", count: 255) }.joined(separator: "/"), nil),
        ("", "is empty"),
        (".", "has a '.' component"), ("./a", "'./a' has a '.' component"), ("a/./b", "has a '.' component"),
        ("..", "'..' must not contain '..'"), ("../x", "must not contain '..'"), ("a/../b", "'a/../b' must not contain '..'"),
        ("a/..", "must not contain '..'"),
        ("/abs", "'/abs' is absolute; it must be relative to the issue folder"), ("//x", "is absolute"),
        ("a//b", "'a//b' has an empty component"), ("a/", "has an empty component"),
        ("a\\b", "'a\\b' must not contain '\\' (Windows reads it as '/')"), ("\\\\server\\x", "must not contain '\\'"),
        ("~", "'~' is not the home folder here"), ("~/x", "'~' is not the home folder here"),
        ("a\u{0}b", "'a\\u{0}b' must not contain NUL, control or bidi characters"), ("a\tb", "'a\\u{9}b'"),
        ("a\nb", "'a\\u{A}b'"), ("\u{1B}[2J", "'\\u{1B}[2J' must not contain NUL"), ("x\u{7F}", "'x\\u{7F}'"),
        ("a\u{85}.pdf", "'a\\u{85}.pdf' must not contain NUL"), ("a\u{202E}fdp.pdf", "'a\\u{202E}fdp.pdf'"),
        ("...", "has a component of only dots and spaces"), (" ", "only dots and spaces"), ("a/ /b", "only dots and spaces"),
        (". .", "only dots and spaces"), ("．．/x", "only dots and spaces, or look-alikes of them ('．．')"),
        ("‥/x", "only dots and spaces"), ("a/。。", "only dots and spaces"), ("\u{3000}", "only dots and spaces"),
        ("a／b", "a Unicode look-alike of '/' or '\\'"), ("a＼b.pdf", "look-alike of '/' or '\\'"),
        (String(repeating: "x", count: 256), "has a component of 256 bytes; the limit is 255"),
        ("a/" + String(repeating: "é", count: 128), "has a component of 256 bytes"),
        ((1...16).map { _ in String(repeating: "x", count: 255) }.joined(separator: "/") + "/ab", "is 4098 bytes long; the limit is 4096"),
    ]

    @Test(arguments: relativePaths)
    func aPathInsideAnIssueFolderIsOneRule(_ text: String, _ refusal: String?) {
        expect(text, refusal, problem: RelativePath.problem(with: text), made: { () throws(LibraryError) in try RelativePath(text, door: "test").text })
    }

    /// The error names the door, then the value with its control characters escaped, and has the
    /// library's code for names or paths.
    @Test func theErrorNamesTheDoorAndTheValue() {
        #expect(throws: LibraryError(.invalidIssueName, "ADDISSUE name 'red\\u{1B}[31m' must not contain NUL, control or bidi characters")) {
            try IssueName("red\u{1B}[31m", door: "ADDISSUE name")
        }
        #expect(throws: LibraryError(.invalidPath, "ADDASSET destination_path 'a/../../b.pdf' must not contain '..'")) {
            try RelativePath("a/../../b.pdf", door: "ADDASSET destination_path")
        }
        #expect(IssueName.problem(with: "a\u{202E}b")?.unicodeScalars.contains { TerminalText.needsEscape($0) } == false)
    }
}
