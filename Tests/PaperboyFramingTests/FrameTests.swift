import Foundation
import PaperboyFraming
import Testing

@Suite("Frame: encoding, header lines, quoting", .timeLimit(.minutes(1)))
struct FrameTests {
    @Test func aFrameIsItsHeaderLineThenItsPayload() {
        #expect(Frame.encode("HELLO", Data(#"{"protocols":[1]}"#.utf8)) == Data("HELLO 17\n{\"protocols\":[1]}".utf8))
        #expect(Frame.encode("OK") == Data("OK 0\n".utf8))
        let binary = Data([0x00, 0x0A, 0xFF])
        // docs/WritingTransports.md's example, byte for byte.
        #expect(Array(Frame.encode("DATA", binary)) == [0x44, 0x41, 0x54, 0x41, 0x20, 0x33, 0x0A, 0x00, 0x0A, 0xFF])
    }

    @Test(arguments: [
        ("A 0", "A", 0),
        ("HELLO 17", "HELLO", 17),
        ("ABCDEFGHIJKLMNOP 1234567890", "ABCDEFGHIJKLMNOP", 1_234_567_890),
        ("DATA 9999999999", "DATA", 9_999_999_999),
    ])
    func aHeaderLineGivesItsKindAndLength(line: String, kind: String, length: Int) throws {
        let parsed = try #require(Frame.parseHeader(Array(line.utf8)))
        #expect(parsed.kind == kind)
        #expect(parsed.length == length)
    }

    @Test(arguments: [
        "", "HELLO", "HELLO17", " 5", "HELLO ", "hello 5", "Hello 5", "HEL1O 5", "HÉLLO 5", "ABCDEFGHIJKLMNOPQ 5",
        "HELLO -1", "HELLO +1", "HELLO 1x", "HELLO 0x10", "HELLO 1e3", "HELLO 12345678901", "HELLO 99999999999999999999",
        "HELLO  5", "HELLO 5 ", "HELLO\t5", "HELLO 5\r", "HELLO 5\n", "HELLO 5 5",
    ])
    func aLineThatIsNotKindSpaceDigitsIsRefused(line: String) {
        #expect(Frame.parseHeader(Array(line.utf8)) == nil, "\(Frame.quote(Array(line.utf8))) was taken for a header")
    }

    @Test func aLengthWithLeadingZerosIsRefusedAsTheDocsSay() {
        // docs/WritingTransports.md#framing: LENGTH has "no sign, no padding".
        withKnownIssue("Frame.parseHeader accepts zero-padded lengths (reads 007 as 7)") {
            #expect(Frame.parseHeader(Array("HELLO 007".utf8)) == nil)
            #expect(Frame.parseHeader(Array("HELLO 00".utf8)) == nil)
        }
    }

    @Test func quotingKeepsPrintableASCIIAndEscapesTheRest() {
        #expect(Frame.quote(Array("HELLO 5\n".utf8)) == #""HELLO 5\n""#)
        #expect(Frame.quote([0x00, 0x1B, 0x7F, 0xFF, 0x5C]) == #""\x00\x1b\x7f\xff\x5c""#)
        #expect(Frame.quote([UInt8]()) == #""""#)
        let long = [UInt8](repeating: UInt8(ascii: "A"), count: 49)
        #expect(Frame.quote(long) == "\"" + String(repeating: "A", count: 48) + "…\"")
        #expect(Frame.quote(long.dropLast()) == "\"" + String(repeating: "A", count: 48) + "\"")
    }
}
