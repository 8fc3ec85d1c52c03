import Foundation
import Paperboy
import PaperboyTestServers
import PaperboyTesting
import Testing

/// The one reader for outside JSON: each limit and each malformed input refused with its exact
/// error, what is within the limits accepted as Foundation accepts it (a seeded fuzz), and a
/// thread of ``JSONReader/Limits/threadStackSize`` decoding and encoding the deepest JSON it lets in.
@Suite("JSONReader", .timeLimit(.minutes(3)))
struct JSONReaderTests {
    /// Small limits, so that each is easy to reach.
    static let small = JSONReader.Limits(maxDepth: 4, maxBytes: 200, maxElements: 5, maxMembers: 3, maxStringBytes: 8)
    static let reader = JSONReader("test door", limits: small)

    static func nested(_ levels: Int) -> String {
        String(repeating: "[", count: levels) + String(repeating: "]", count: levels)
    }

    static let hostile: [(input: String, error: String)] = [
        // Depth: the bracket that opens level 5.
        (nested(5), "test door: JSON nested deeper than 4 levels at byte 4"),
        (#"{"a":{"b":{"c":{"d":{}}}}}"#, "test door: JSON nested deeper than 4 levels at byte 20"),
        (#"[{"a":[{"b":1}]},[[[["#, "test door: JSON nested deeper than 4 levels at byte 20"),
        // Size, before anything else is looked at.
        ("[" + String(repeating: "1,", count: 100) + "1]", "test door: JSON of 203 bytes; the limit is 200"),
        // Counts: the element or member past the limit.
        ("[1,2,3,4,5,6]", "test door: JSON array of more than 5 elements at byte 11"),
        (#"{"a":1,"b":2,"c":3,"d":4}"#, "test door: JSON object of more than 3 members at byte 19"),
        // A string's length as UTF-8, escapes decoded: "é" is 2 bytes, "\u00e9" too.
        (#"["123456789"]"#, "test door: JSON string longer than 8 bytes at byte 1"),
        (#"{"keykeykey":1}"#, "test door: JSON string longer than 8 bytes at byte 1"),
        (#"["ééééé"]"#, "test door: JSON string longer than 8 bytes at byte 1"),
        (#"["\u00e9\u00e9\u00e9\u00e9\u00e9"]"#, "test door: JSON string longer than 8 bytes at byte 1"),
        // Numbers no Double holds.
        ("1e999", "test door: JSON number 1e999 is out of range at byte 0"),
        ("[-1E+400]", "test door: JSON number -1E+400 is out of range at byte 1"),
        ("5e-999", "test door: JSON number 5e-999 is out of range at byte 0"),
        ("0.000000e1", "test door: JSON number 0.000000e1 is out of range at byte 0"),
        // Malformed.
        ("", "test door: invalid JSON at byte 0: unexpected end of the JSON"),
        ("   ", "test door: invalid JSON at byte 3: unexpected end of the JSON"),
        ("[1,2", "test door: invalid JSON at byte 4: unexpected end of the JSON"),
        (#"{"a":"#, "test door: invalid JSON at byte 5: unexpected end of the JSON"),
        (#"["abc"#, "test door: invalid JSON at byte 1: unterminated string"),
        ("[1 2]", "test door: invalid JSON at byte 3: expected ',' or ']' but found '2'"),
        (#"{"a" 1}"#, "test door: invalid JSON at byte 5: expected ':' but found '1'"),
        ("{1:2}", "test door: invalid JSON at byte 1: expected a string key but found '1'"),
        ("[1,]", "test door: invalid JSON at byte 3: expected a value but found ']'"),
        // A full array with a comma after it is malformed, not one element too many (FuzzJSON).
        ("[1,2,3,4,5,]", "test door: invalid JSON at byte 11: expected a value but found ']'"),
        ("[1,2,3,4,5,x]", "test door: invalid JSON at byte 11: expected a value but found 'x'"),
        (#"{"a":1,}"#, "test door: invalid JSON at byte 7: expected a string key but found '}'"),
        ("[1]]", "test door: invalid JSON at byte 3: ']' after the JSON value"),
        ("tru", "test door: invalid JSON at byte 0: expected 'true'"),
        ("nul", "test door: invalid JSON at byte 0: expected 'null'"),
        ("01", "test door: invalid JSON at byte 1: '1' after the JSON value"),
        ("-", "test door: invalid JSON at byte 1: a number needs a digit after '-'"),
        ("1.", "test door: invalid JSON at byte 2: a number needs a digit after '.'"),
        ("1e+", "test door: invalid JSON at byte 3: a number needs a digit in its exponent"),
        ("+1", "test door: invalid JSON at byte 0: expected a value but found '+'"),
        ("NaN", "test door: invalid JSON at byte 0: expected a value but found 'N'"),
        // NUL bytes, in a string and outside one; other control characters.
        ("[\"a\u{0}\"]", "test door: invalid JSON at byte 3: control character U+0000 in a string"),
        ("[1]\u{0}", "test door: invalid JSON at byte 3: byte 0x00 after the JSON value"),
        ("\u{0}", "test door: invalid JSON at byte 0: expected a value but found byte 0x00"),
        ("[\"\n\"]", "test door: invalid JSON at byte 2: control character U+000A in a string"),
        // Escapes: lone surrogates, a high one followed by something else, bad escapes.
        (#"["\ud800"]"#, "test door: invalid JSON at byte 2: lone surrogate \\ud800 in a string"),
        (#"["\udc00"]"#, "test door: invalid JSON at byte 2: lone surrogate \\udc00 in a string"),
        (#"["\ud800\u0041"]"#, "test door: invalid JSON at byte 2: lone surrogate \\ud800 in a string"),
        (#"["\x"]"#, "test door: invalid JSON at byte 2: invalid escape '\\x' in a string"),
        (#"["\u12g4"]"#, "test door: invalid JSON at byte 2: invalid \\u escape"),
        (#"["\u12"]"#, "test door: invalid JSON at byte 2: invalid \\u escape"),
    ]

    @Test(arguments: hostile)
    func hostileInputIsRefusedWithItsExactError(input: String, error: String) {
        let thrown = Result { () throws(JSONInputError) in try Self.reader.check(Data(input.utf8)) }
        guard case .failure(let refusal) = thrown else {
            Issue.record("\(input.debugDescription) was accepted")
            return
        }
        #expect(refusal.description == error, "\(input.debugDescription)")
        // Whatever the reader refuses as malformed, Foundation refuses too, but for its two
        // leniencies (a comma before a closing bracket, bytes after a NUL).
        if refusal.kind == .syntax, !JSONReaderFuzzTests.isFoundationLeniency(Array(input.utf8)) {
            #expect((try? JSONSerialization.jsonObject(with: Data(input.utf8), options: .fragmentsAllowed)) == nil, "\(input.debugDescription)")
        }
    }

    @Test func invalidUTF8IsRefusedWhereItStands() {
        let cases: [([UInt8], String)] = [
            ([0x22, 0xFF, 0x22], "test door: invalid JSON at byte 1: invalid UTF-8 in a string"),
            ([0x22, 0xC3, 0x22], "test door: invalid JSON at byte 1: invalid UTF-8 in a string"),
            // An overlong '/', an encoded surrogate, a code point above U+10FFFF.
            ([0x22, 0xC0, 0xAF, 0x22], "test door: invalid JSON at byte 1: invalid UTF-8 in a string"),
            ([0x22, 0xED, 0xA0, 0x80, 0x22], "test door: invalid JSON at byte 1: invalid UTF-8 in a string"),
            ([0x22, 0xF4, 0x90, 0x80, 0x80, 0x22], "test door: invalid JSON at byte 1: invalid UTF-8 in a string"),
            ([0xEF, 0xBB, 0xBF, 0x31], "test door: invalid JSON at byte 0: expected a value but found byte 0xef"),
        ]
        for (bytes, message) in cases {
            let result = Result { () throws(JSONInputError) in try Self.reader.check(Data(bytes)) }
            guard case .failure(let error) = result else {
                Issue.record("\(bytes) was accepted")
                continue
            }
            #expect(error.description == message, "\(bytes)")
        }
    }

    @Test func whatIsWithinTheLimitsIsAcceptedAtEveryLimitExactly() throws {
        let accepted = [
            Self.nested(4), #"{"a":{"b":{"c":{}}}}"#, "[1,2,3,4,5]", #"{"a":1,"b":2,"c":3}"#, #"["12345678"]"#, #"["éééé"]"#,
            #"["\ud83d\ude00\u00e9"]"#, "\"😀😀\"", "1.7976931348623157e308", "-0", "-0.0", "true", " null ", "[]", "{}",
            #"{"a":[],"a":{}}"#, "\t[\r\n1 ]\n",
        ]
        for input in accepted {
            let checked = try Self.reader.check(Data(input.utf8))
            #expect(checked.data == Data(input.utf8))
            #expect(throws: Never.self, "\(input)") { try checked.jsonObject() }
            #expect(throws: Never.self, "\(input)") { try checked.decode(JSONValue.self) }
        }
    }

    @Test func theTopLevelIDIsCapturedWhenItCameBeforeTheProblem() {
        func captured(_ text: String) -> Int64? {
            let result = Result { () throws(JSONInputError) in try JSONReader("d", limits: .message).check(Data(text.utf8), capturing: "id") }
            guard case .failure(let error) = result else { return nil }
            return error.captured
        }
        #expect(captured(#"{"id":42,"x":"# + Self.nested(70) + "}") == 42)
        #expect(captured(#"{"x":"# + Self.nested(70) + #","id":42}"#) == nil)
        #expect(captured(#"{"x":{"id":7,"y":"# + Self.nested(70) + "}}") == nil)
        #expect(captured(#"{"id":"42","x":"# + Self.nested(70) + "}") == nil)
        #expect(captured(#"{"id":-9007199254740993,"x":"# + Self.nested(70) + "}") == -9_007_199_254_740_993)
    }

    @Test func filesAndStreamsAreReadNoFurtherThanTheLimit() throws {
        let folder = TempFolder(prefix: "jsonreader")
        let reader = JSONReader("state file", limits: Self.small)
        #expect(try reader.contents(of: folder.file("absent.json")) == nil)
        let file = folder.file("big.json")
        try Data(repeating: 0x20, count: 10_000).write(to: file)
        #expect(throws: JSONInputError(door: "state file", kind: .size, problem: "JSON of more than 200 bytes; the limit is 200", offset: nil)) {
            try reader.contents(of: file)
        }
        try Data("[1]".utf8).write(to: file)
        #expect(try reader.contents(of: file) == Data("[1]".utf8))
    }

    // MARK: Stack

    /// The deepest JSON each preset lets in, decoded and encoded as a `JSONValue` (the deepest
    /// Codable type read) on a thread of the stack size the preset asks for. A stack too small
    /// kills the test process with SIGSEGV, as it killed the daemon.
    @Test(arguments: [("message", JSONReader.Limits.message), ("appValue", .appValue), ("catalog", .catalog), ("stateFile", .stateFile)])
    func theDeepestJSONLetInIsDecodedAndEncodedOnAThreadOfThePresetsStackSize(name: String, limits: JSONReader.Limits) async throws {
        let levels = limits.maxDepth
        let text = String(repeating: #"{"a":["#, count: levels / 2) + (levels % 2 == 1 ? "[]" : "1") + String(repeating: "]}", count: levels / 2)
        let data = Data(text.utf8)
        let reader = JSONReader(name, limits: limits)
        let checked = try reader.check(data)
        let deeper = Data((#"{"a":["# + text + "]}").utf8)
        #expect(throws: JSONInputError.self) { try reader.check(deeper) }
        let encoded: Data = try await withCheckedThrowingContinuation { continuation in
            let thread = Thread {
                continuation.resume(with: Result {
                    let value = try checked.decode(JSONValue.self)
                    return try JSONEncoder().encode(value)
                })
            }
            thread.stackSize = limits.threadStackSize
            thread.start()
        }
        #expect(try JSONReader(name, limits: limits).check(encoded).data.count == encoded.count)
    }

    /// Helper frames are decoded in the transfer's task: the deepest message the reader lets in
    /// fits a thread of the cooperative pool.
    @Test func theDeepestMessageIsDecodedOnTheCooperativePool() async throws {
        let levels = JSONReader.Limits.message.maxDepth
        let text = String(repeating: #"{"a":["#, count: levels / 2) + "1" + String(repeating: "]}", count: levels / 2)
        let checked = try JSONReader("pool", limits: .message).check(Data(text.utf8))
        let value = try await Task.detached { try checked.decode(JSONValue.self) }.value
        #expect(value != .null)
    }
}

/// Random documents, valid and then broken in random places, through the reader and through
/// `JSONSerialization`: the reader never traps, and within the limits it accepts exactly what
/// Foundation accepts.
@Suite("JSONReader fuzz", .timeLimit(.minutes(3)))
struct JSONReaderFuzzTests {
    @Test func theReaderNeverTrapsAndAgreesWithJSONSerializationWithinTheLimits() async throws {
        let seed = ProcessInfo.processInfo.environment["PAPERBOY_JSON_SEED"].flatMap(UInt64.init) ?? UInt64.random(in: 1...UInt64.max)
        print("JSONReader fuzz: seed \(seed) (set PAPERBOY_JSON_SEED to replay)")
        // Thousands of documents: a thread of its own, not the pool's.
        let report = try await offThePool { Self.fuzz(seed: seed, documents: 20_000) }
        #expect(report.disagreements.isEmpty, "seed \(seed): \(report.disagreements.count) disagreement(s), first: \(report.disagreements.prefix(3))")
        // The run went where it should: accepted, malformed and each limit, many times.
        let kinds = ["accepted", "syntax", "depth", "elements", "members", "string", "number"]
        #expect(kinds.allSatisfy { report.outcomes[$0, default: 0] >= 20 }, "seed \(seed): outcomes \(report.outcomes)")
        print("JSONReader fuzz: outcomes \(report.outcomes.sorted { $0.key < $1.key })")
    }

    struct Report: Sendable {
        var disagreements: [String] = []
        var outcomes: [String: Int] = [:]
    }

    static let limits = JSONReader.Limits(maxDepth: 8, maxBytes: 64 * 1024, maxElements: 12, maxMembers: 8, maxStringBytes: 24)

    static func fuzz(seed: UInt64, documents: Int) -> Report {
        var generator = SplitMix64(seed: seed)
        var report = Report()
        let reader = JSONReader("fuzz", limits: limits)
        for _ in 0..<documents {
            var budget = 300
            var text = document(depth: Int.random(in: 0...10, using: &generator), budget: &budget, using: &generator)
            // One document in six is a wide array or object, for the count limits; one in six sits
            // at the bottom of a chain of containers, for the depth limit.
            let shape = Int.random(in: 0..<6, using: &generator)
            if shape == 1 {
                let count = Int.random(in: 6...16, using: &generator)
                text = Bool.random(using: &generator)
                    ? "[" + (0..<count).map { "\($0)" }.joined(separator: ",") + "]"
                    : "{" + (0..<count).map { #""k\#($0)":\#($0)"# }.joined(separator: ",") + "}"
            }
            if shape == 0 {
                for _ in 0..<Int.random(in: 3...10, using: &generator) {
                    text = Bool.random(using: &generator) ? "[" + text + "]" : #"{"a":"# + text + "}"
                }
            }
            var bytes = Array(text.utf8)
            for _ in 0..<Int.random(in: 0...3, using: &generator) where Int.random(in: 0..<3, using: &generator) == 0 {
                mutate(&bytes, using: &generator)
            }
            let data = Data(bytes)
            let result = Result { () throws(JSONInputError) in try reader.check(data) }
            let foundation = (try? JSONSerialization.jsonObject(with: data, options: .fragmentsAllowed)) != nil
            switch result {
            case .success(let checked):
                report.outcomes["accepted", default: 0] += 1
                if !foundation { report.disagreements.append("accepted, Foundation refuses: \(show(bytes))") }
                if (try? checked.decode(JSONValue.self)) == nil { report.disagreements.append("accepted, JSONDecoder refuses: \(show(bytes))") }
            case .failure(let error):
                report.outcomes["\(error.kind)", default: 0] += 1
                if error.kind == .syntax, foundation {
                    if isFoundationLeniency(bytes) {
                        report.outcomes["stricter than Foundation", default: 0] += 1
                    } else {
                        report.disagreements.append("\(error.problem), Foundation accepts: \(show(bytes))")
                    }
                }
            }
        }
        return report
    }

    /// Input Foundation accepts against RFC 8259, which the reader refuses: a comma before `]` or
    /// `}` (whitespace between), or a NUL byte outside a string (Foundation stops reading there).
    static func isFoundationLeniency(_ bytes: [UInt8]) -> Bool {
        var inString = false
        var escaped = false
        var lastSignificant: UInt8 = 0
        for byte in bytes {
            if inString {
                if escaped { escaped = false } else if byte == UInt8(ascii: "\\") { escaped = true } else if byte == UInt8(ascii: "\"") { inString = false }
                continue
            }
            if byte == 0 { return true }
            if byte == UInt8(ascii: "\"") { inString = true }
            if (byte == UInt8(ascii: "]") || byte == UInt8(ascii: "}")), lastSignificant == UInt8(ascii: ",") { return true }
            if ![0x20, 0x09, 0x0A, 0x0D].contains(byte) { lastSignificant = byte }
        }
        return false
    }

    static func show(_ bytes: [UInt8]) -> String {
        String(decoding: bytes.prefix(200), as: UTF8.self).debugDescription + " \(bytes.prefix(40).map { String(format: "%02x", $0) }.joined())"
    }

    static let strings = ["", "a", "id", "é", "😀", #"\""#, #"\\"#, #"\/"#, #"\n"#, #"\u0041"#, #"\u00e9"#, #"\ud83d\ude00"#,
                          #"\ud800"#, #"\udc00x"#, String(repeating: "x", count: 30), String(repeating: "é", count: 13)]
    static let numbers = ["0", "-0", "1", "-12", "3.25", "1e5", "1E-5", "2.5e+10", "1e999", "-1e400", "123456789012345678901234567890",
                          "0.0000001", "1.7976931348623157e308", "5e-324", "5e-999", "0e-999", "0.000000e1"]

    /// A random valid document at most `depth` levels deep, of at most about `budget` values.
    static func document(depth: Int, budget: inout Int, using generator: inout SplitMix64) -> String {
        budget -= 1
        let choice = Int.random(in: 0..<(depth > 0 && budget > 0 ? 10 : 6), using: &generator)
        switch choice {
        case 0: return ["true", "false", "null"].randomElement(using: &generator)!
        case 1, 2: return numbers.randomElement(using: &generator)!
        case 3, 4, 5: return "\"" + strings.randomElement(using: &generator)! + "\""
        case 6, 7:
            let count = Int.random(in: 0...(Int.random(in: 0..<3, using: &generator) == 0 ? 20 : 4), using: &generator)
            return "[" + (0..<count).map { _ in document(depth: depth - 1, budget: &budget, using: &generator) }.joined(separator: ",") + "]"
        default:
            let count = Int.random(in: 0...(Int.random(in: 0..<3, using: &generator) == 0 ? 14 : 4), using: &generator)
            let members = (0..<count).map { _ in
                "\"" + strings.randomElement(using: &generator)! + "\":" + document(depth: depth - 1, budget: &budget, using: &generator)
            }
            return "{" + members.joined(separator: ",") + "}"
        }
    }

    static let alphabet: [UInt8] = Array(#"{}[],:"\ u0123456789abcdefeE+-.truefalsenull"#.utf8) + [0x00, 0x09, 0x0A, 0x0D, 0x1F, 0x7F, 0x80, 0xC3, 0xA9, 0xED, 0xFF]

    static func mutate(_ bytes: inout [UInt8], using generator: inout SplitMix64) {
        let position = Int.random(in: 0...bytes.count, using: &generator)
        switch Int.random(in: 0..<4, using: &generator) {
        case 0: bytes.insert(alphabet.randomElement(using: &generator)!, at: position)
        case 1 where position < bytes.count: bytes.remove(at: position)
        case 2 where position < bytes.count: bytes[position] = alphabet.randomElement(using: &generator)!
        default: bytes = Array(bytes.prefix(position))
        }
    }
}

/// Every door goes through the reader: no JSON is decoded in the sources but by ``CheckedJSON``.
@Suite("Outside JSON doors", .timeLimit(.minutes(1)))
struct JSONDoorsTests {
    static let repositoryRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    @Test func noSourceDecodesJSONButThroughTheReader() throws {
        var found: [String] = []
        for folder in ["Sources", "Plugins", "Examples"] {
            let root = Self.repositoryRoot.appendingPathComponent(folder)
            let files = FileManager.default.enumerator(atPath: root.path)?.compactMap { $0 as? String }.filter { $0.hasSuffix(".swift") } ?? []
            #expect(!files.isEmpty || folder == "Examples", "no Swift file under \(root.path)")
            for file in files where file != "Paperboy/Support/JSONReader.swift" {
                let text = try String(contentsOf: root.appendingPathComponent(file), encoding: .utf8)
                for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                    let code = line.trimmingCharacters(in: .whitespaces)
                    if code.hasPrefix("//") { continue }
                    // JSONDecoder's and JSONSerialization's entry points; a JSONReader's `decode(_:from:)` checks first.
                    let decodes = code.contains(".decode(") && code.contains("from:") && !code.lowercased().contains("reader")
                    if decodes || code.contains("JSONSerialization.") {
                        found.append("\(folder)/\(file):\(number + 1): \(code)")
                    }
                }
            }
        }
        #expect(found.isEmpty, "JSON decoded without JSONReader (docs/Security.md, 'One reader for outside JSON'):\n\(found.joined(separator: "\n"))")
    }
}
