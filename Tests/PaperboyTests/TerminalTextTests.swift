import Paperboy
import Testing

@Suite("TerminalText", .timeLimit(.minutes(2)))
struct TerminalTextTests {
    @Test func controlAndBidiCharactersAreSpelledOutPrintableTextStays() {
        #expect(TerminalText.escape("a\u{1B}]0;pwned\u{07}b") == #"a\u{1B}]0;pwned\u{7}b"#)
        #expect(TerminalText.escape("\u{202E}exe.pdf\u{2066}\u{200F}\u{061C}") == #"\u{202E}exe.pdf\u{2066}\u{200F}\u{61C}"#)
        // Line and paragraph separators break lines in log readers, kept newlines or not.
        #expect(TerminalText.escape("a\u{2028}b\u{2029}c", keepingNewlines: true) == #"a\u{2028}b\u{2029}c"#)
        #expect(TerminalText.escape("\u{7F}\u{80}\u{9B}\u{9F}\u{A0}") == "\\u{7F}\\u{80}\\u{9B}\\u{9F}\u{A0}")
        #expect(TerminalText.escape("line\nnext\r") == #"line\u{A}next\u{D}"#)
        #expect(TerminalText.escape("line\nnext\r", keepingNewlines: true) == "line\nnext\\u{D}")
        let printable = "Revue d’été: 東京 🗞️ tab\there \\ done"
        #expect(TerminalText.escape(printable) == printable)
        #expect(TerminalText.escape(TerminalText.escape("\u{1B}")) == TerminalText.escape("\u{1B}"))
    }
}
