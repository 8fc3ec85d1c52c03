import Foundation

/// The one way JSON from outside enters Paperboy: a door's name and its limits, checked over
/// the bytes in one pass before Foundation's decoder sees them.
///
/// Foundation's `JSONDecoder` and `JSONSerialization` recurse once per level of nesting: JSON a
/// few hundred levels deep (600 bytes) overflows the small stack of a connection thread and
/// kills the process. The check here is a loop with an explicit stack of at most
/// ``Limits/maxDepth`` entries; it validates the whole grammar (RFC 8259, UTF-8), so that what it
/// accepts is what Foundation accepts, and refuses what would hurt: nesting deeper than
/// ``Limits/maxDepth``, more than ``Limits/maxBytes``, an array of more than
/// ``Limits/maxElements`` elements, an object of more than ``Limits/maxMembers`` members, a
/// string of more than ``Limits/maxStringBytes`` bytes (decoded, as UTF-8), a number no `Double`
/// holds (`1e999`, `5e-999`, a zero with an exponent), a lone surrogate (`\ud800`), a control character in a string. It is
/// stricter than Foundation in two ways, as RFC 8259 is: no comma before `]` or `}`, nothing
/// (not even a NUL byte) after the value.
///
/// Only ``CheckedJSON`` can be decoded, so a door cannot skip the check; every door uses one
/// (docs/Security.md lists them): daemon requests and replies, push payloads, `userInfo`,
/// catalogs, helper frames, and the library's own state files. A thread that decodes checked
/// JSON needs a stack for ``Limits/maxDepth`` levels: ``Limits/threadStackSize``.
package struct JSONReader: Sendable {
    /// How much JSON a door accepts.
    package struct Limits: Sendable, Equatable {
        /// The deepest nesting of arrays and objects (`[[1]]` is 2 levels).
        package var maxDepth: Int
        /// The most bytes of the whole document.
        package var maxBytes: Int
        /// The most elements of one array.
        package var maxElements: Int
        /// The most members of one object.
        package var maxMembers: Int
        /// The most bytes of one string (a key too), counted as UTF-8 once escapes are decoded.
        package var maxStringBytes: Int

        package init(maxDepth: Int, maxBytes: Int, maxElements: Int, maxMembers: Int, maxStringBytes: Int) {
            self.maxDepth = maxDepth
            self.maxBytes = maxBytes
            self.maxElements = maxElements
            self.maxMembers = maxMembers
            self.maxStringBytes = maxStringBytes
        }

        /// Messages of the framed protocols (daemon requests and replies, helper frames): 64
        /// levels (a request nests an app value of 32 levels 2 deep, a reply 5 deep), a frame's
        /// 256 KiB, strings as long as an app value's, and counts no legitimate message nears.
        package static let message = Limits(maxDepth: 64, maxBytes: 256 * 1024, maxElements: 65_536, maxMembers: 16_384,
                                            maxStringBytes: 64 * 1024)

        /// An app's own JSON: `userInfo` and push payloads. 32 levels, so that it fits a
        /// ``message`` with room to spare; 64 KiB (`Library.Configuration.maxUserInfoBytes`'s
        /// default, 16 times an APNs payload).
        package static let appValue = Limits(maxDepth: 32, maxBytes: 64 * 1024, maxElements: 16_384, maxMembers: 4_096,
                                             maxStringBytes: 64 * 1024)

        /// A publisher's catalog: 4 MiB (what `Library.fetchData` accepts by default); arrays of
        /// at most `max_assets` elements (10,000 by default: no list of a catalog is longer than
        /// its assets); URLs and titles far below 64 KiB.
        package static let catalog = Limits(maxDepth: 64, maxBytes: 4 << 20, maxElements: 10_000, maxMembers: 4_096,
                                            maxStringBytes: 64 * 1024)

        /// The library's own state files (claims, `daemon.json`, the feed schedule, purged
        /// issues) and JSON in its rows: flat lists and maps, but long ones (a claim per asset
        /// of a million-asset library is 40 MB).
        package static let stateFile = Limits(maxDepth: 16, maxBytes: 64 << 20, maxElements: 1 << 22, maxMembers: 1 << 20,
                                              maxStringBytes: 64 * 1024)

        /// The same limits with another size.
        package func with(maxBytes: Int) -> Limits {
            var limits = self
            limits.maxBytes = maxBytes
            return limits
        }

        /// Stack bytes allowed per level of nesting for Foundation's `JSONDecoder` and
        /// `JSONEncoder` on a `JSONValue` (the deepest Codable type read). `JSONReaderTests`
        /// decodes and encodes ``maxDepth`` levels of each preset on a thread of
        /// ``threadStackSize`` bytes (a debug build, Linux, Swift 6.3); the margin was not measured.
        package static let stackBytesPerLevel = 8 * 1024

        /// A stack for a thread that decodes or encodes JSON within these limits (and does its
        /// other work): 256 KiB plus ``stackBytesPerLevel`` per level.
        package var threadStackSize: Int { 256 * 1024 + maxDepth * Self.stackBytesPerLevel }
    }

    /// What the door is, for errors: `daemon request ADDASSET`, `push payload`, `claims file /…`.
    package let door: String
    package let limits: Limits

    package init(_ door: String, limits: Limits) {
        self.door = door
        self.limits = limits
    }

    /// Checks `data` against the limits and the JSON grammar.
    ///
    /// - Parameter key: a member of the top-level object whose integer value the error carries
    ///   (``JSONInputError/captured``), such as a request's `id`, so that even a refused request
    ///   can be answered by id; the checked JSON carries its text (``CheckedJSON/captured``).
    /// - Throws: ``JSONInputError`` naming the door, the limit or the problem, and the byte offset
    ///   (from 0).
    /// - Parameter recordingNonIntegers: whether the checked JSON lists where its numbers that
    ///   are not integers an `Int64` holds are (``CheckedJSON/nonIntegers``).
    package func check(_ data: Data, capturing key: String? = nil, recordingNonIntegers: Bool = false) throws(JSONInputError) -> CheckedJSON {
        var scanner = JSONScan(limits: limits, capturing: key.map { Array($0.utf8) }, recordingNonIntegers: recordingNonIntegers)
        let failure = data.withUnsafeBytes { bytes -> JSONScan.Failure? in
            do throws(JSONScan.Failure) {
                try scanner.run(bytes)
                return nil
            } catch {
                return error
            }
        }
        if let failure {
            throw JSONInputError(door: door, kind: failure.kind, problem: failure.problem, offset: failure.offset,
                                 captured: scanner.capturedText.flatMap { Int64($0) })
        }
        return CheckedJSON(data: data, door: door, captured: scanner.capturedText, nonIntegers: scanner.nonIntegers)
    }

    /// Checks, then decodes with `decoder`.
    ///
    /// - Throws: ``JSONInputError``, or the decoder's `DecodingError` for JSON of the wrong shape.
    package func decode<Value: Decodable>(_ type: Value.Type, from data: Data, using decoder: JSONDecoder = JSONCoding.plain.decoder) throws -> Value {
        try check(data).decode(type, using: decoder)
    }

    /// Reads at most ``Limits/maxBytes`` (plus one, to tell a larger input) from `handle`.
    package func read(from handle: FileHandle) throws -> Data {
        let data = try handle.read(upToCount: limits.maxBytes + 1) ?? Data()
        guard data.count <= limits.maxBytes else { throw tooLarge(nil) }
        return data
    }

    /// The file at `url`, read without ever holding more than ``Limits/maxBytes`` (plus one):
    /// `nil` when it does not exist.
    ///
    /// - Throws: ``JSONInputError`` for a larger file, or the error of opening or reading it.
    package func contents(of url: URL) throws -> Data? {
        let handle: FileHandle
        do {
            handle = try FileHandle(forReadingFrom: url)
        } catch CocoaError.fileReadNoSuchFile, CocoaError.fileNoSuchFile {
            return nil
        }
        defer { try? handle.close() }
        let data = try handle.read(upToCount: limits.maxBytes + 1) ?? Data()
        guard data.count <= limits.maxBytes else { throw tooLarge(nil) }
        return data
    }

    private func tooLarge(_ count: Int?) -> JSONInputError {
        let size = count.map { "JSON of \($0) bytes" } ?? "JSON of more than \(limits.maxBytes) bytes"
        return JSONInputError(door: door, kind: .size, problem: "\(size); the limit is \(limits.maxBytes)", offset: nil)
    }
}

/// JSON a ``JSONReader`` has checked: the only JSON Paperboy decodes.
package struct CheckedJSON: Sendable {
    package let data: Data
    /// The door it came through.
    package let door: String
    /// The JSON text of the top-level member ``JSONReader/check(_:capturing:)`` was asked for
    /// (`1.5`, `"7"`, `null`), when it is there and not an object or array.
    package let captured: String?
    /// Where the numbers written with a fraction or an exponent (`1.5`, `1.0`, `1e3`), or too
    /// large for an `Int64`, are (byte ranges, in order), when the check was asked to record them.
    package let nonIntegers: [Range<Int>]

    fileprivate init(data: Data, door: String, captured: String? = nil, nonIntegers: [Range<Int>] = []) {
        self.data = data
        self.door = door
        self.captured = captured
        self.nonIntegers = nonIntegers
    }

    /// Decodes the checked bytes.
    ///
    /// - Throws: the decoder's `DecodingError` for JSON of the wrong shape.
    package func decode<Value: Decodable>(_ type: Value.Type, using decoder: JSONDecoder = JSONCoding.plain.decoder) throws -> Value {
        try decoder.decode(type, from: data)
    }

    /// The checked bytes as Foundation objects (`JSONSerialization`, fragments allowed).
    package func jsonObject() throws -> Any {
        try JSONSerialization.jsonObject(with: data, options: .fragmentsAllowed)
    }
}

/// JSON refused at a door: which door, which limit or problem, where.
package struct JSONInputError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What was wrong.
    package enum Kind: Sendable, Equatable {
        case depth, size, elements, members, string, number, syntax
    }

    /// The door, as ``JSONReader/door``.
    package var door: String
    package var kind: Kind
    /// The problem with its place: `JSON nested deeper than 64 levels at byte 213`.
    package var problem: String
    /// The byte offset (from 0) where the check stopped; `nil` for the size.
    package var offset: Int?
    /// The integer value of the top-level member ``JSONReader/check(_:capturing:)`` was asked
    /// for, when it was read before the problem.
    package var captured: Int64?

    package init(door: String, kind: Kind, problem: String, offset: Int?, captured: Int64? = nil) {
        self.door = door
        self.kind = kind
        self.problem = problem
        self.offset = offset
        self.captured = captured
    }

    /// `daemon request ADDASSET: JSON nested deeper than 64 levels at byte 213`.
    package var description: String { "\(door): \(problem)" }
}

/// The single pass of ``JSONReader/check(_:capturing:)``: a loop over the bytes with an explicit
/// stack of open containers, never recursion.
private struct JSONScan {
    struct Failure: Error {
        var kind: JSONInputError.Kind
        var problem: String
        var offset: Int?
    }

    private enum Expect { case value, valueOrClose, key, keyOrClose, colon, commaOrClose, end }

    private struct Container {
        var isObject: Bool
        var count = 0
    }

    let limits: JSONReader.Limits
    let capturing: [UInt8]?
    /// The JSON text of the captured member's value, when a string, number or literal.
    private(set) var capturedText: String?
    private var stack: [Container] = []
    private var capturingNext = false

    let recordingNonIntegers: Bool
    /// See ``CheckedJSON/nonIntegers``.
    private(set) var nonIntegers: [Range<Int>] = []

    init(limits: JSONReader.Limits, capturing: [UInt8]?, recordingNonIntegers: Bool = false) {
        self.limits = limits
        self.capturing = capturing
        self.recordingNonIntegers = recordingNonIntegers
        stack.reserveCapacity(min(limits.maxDepth, 64))
    }

    mutating func run(_ bytes: UnsafeRawBufferPointer) throws(Failure) {
        guard bytes.count <= limits.maxBytes else {
            throw Failure(kind: .size, problem: "JSON of \(bytes.count) bytes; the limit is \(limits.maxBytes)", offset: nil)
        }
        var expect = Expect.value
        var index = 0
        let count = bytes.count
        while true {
            while index < count, Self.isSpace(bytes[index]) { index += 1 }
            guard index < count else {
                if expect == .end { return }
                throw syntax("unexpected end of the JSON", at: index)
            }
            let byte = bytes[index]
            switch expect {
            case .end:
                throw syntax("\(Self.show(byte)) after the JSON value", at: index)
            case .colon:
                guard byte == UInt8(ascii: ":") else { throw syntax("expected ':' but found \(Self.show(byte))", at: index) }
                index += 1
                expect = .value
            case .commaOrClose:
                let top = stack[stack.count - 1]
                let closer = top.isObject ? UInt8(ascii: "}") : UInt8(ascii: "]")
                if byte == UInt8(ascii: ",") {
                    index += 1
                    expect = top.isObject ? .key : .value
                } else if byte == closer {
                    index += 1
                    stack.removeLast()
                    expect = stack.isEmpty ? .end : .commaOrClose
                } else {
                    throw syntax("expected ',' or '\(Character(UnicodeScalar(closer)))' but found \(Self.show(byte))", at: index)
                }
            case .key, .keyOrClose:
                if byte == UInt8(ascii: "}"), expect == .keyOrClose {
                    index += 1
                    stack.removeLast()
                    expect = stack.isEmpty ? .end : .commaOrClose
                    continue
                }
                guard byte == UInt8(ascii: "\"") else { throw syntax("expected a string key but found \(Self.show(byte))", at: index) }
                stack[stack.count - 1].count += 1
                if stack[stack.count - 1].count > limits.maxMembers {
                    throw Failure(kind: .members, problem: "JSON object of more than \(limits.maxMembers) members at byte \(index)", offset: index)
                }
                let start = index
                index = try string(bytes, from: index)
                if let capturing, stack.count == 1 {
                    capturingNext = index - start - 2 == capturing.count && capturing.indices.allSatisfy { bytes[start + 1 + $0] == capturing[$0] }
                }
                expect = .colon
            case .value, .valueOrClose:
                if byte == UInt8(ascii: "]"), expect == .valueOrClose {
                    index += 1
                    stack.removeLast()
                    expect = stack.isEmpty ? .end : .commaOrClose
                    continue
                }
                // A value is counted once it is one: `[1,]` is a syntax error, not one element too many.
                guard Self.startsValue(byte) else { throw syntax("expected a value but found \(Self.show(byte))", at: index) }
                if let top = stack.last, !top.isObject {
                    stack[stack.count - 1].count += 1
                    if stack[stack.count - 1].count > limits.maxElements {
                        throw Failure(kind: .elements, problem: "JSON array of more than \(limits.maxElements) elements at byte \(index)", offset: index)
                    }
                }
                let capture = capturingNext
                capturingNext = false
                let start = index
                switch byte {
                case UInt8(ascii: "{"), UInt8(ascii: "["):
                    guard stack.count < limits.maxDepth else {
                        throw Failure(kind: .depth, problem: "JSON nested deeper than \(limits.maxDepth) levels at byte \(index)", offset: index)
                    }
                    let isObject = byte == UInt8(ascii: "{")
                    stack.append(Container(isObject: isObject))
                    index += 1
                    expect = isObject ? .keyOrClose : .valueOrClose
                    continue
                case UInt8(ascii: "\""):
                    index = try string(bytes, from: index)
                case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                    index = try number(bytes, from: index)
                case UInt8(ascii: "t"): index = try literal("true", bytes, at: index)
                case UInt8(ascii: "f"): index = try literal("false", bytes, at: index)
                case UInt8(ascii: "n"): index = try literal("null", bytes, at: index)
                default:
                    throw syntax("expected a value but found \(Self.show(byte))", at: index)
                }
                if capture { capturedText = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self) }
                expect = stack.isEmpty ? .end : .commaOrClose
            }
        }
    }

    /// Whether `byte` can begin a JSON value.
    private static func startsValue(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "{"), UInt8(ascii: "["), UInt8(ascii: "\""), UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "t"), UInt8(ascii: "f"), UInt8(ascii: "n"):
            true
        default:
            false
        }
    }

    private static func isSpace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09
    }

    /// `'x'` for printable ASCII, `byte 0x00` otherwise.
    private static func show(_ byte: UInt8) -> String {
        (0x21...0x7E).contains(byte) ? "'\(Character(UnicodeScalar(byte)))'" : String(format: "byte 0x%02x", byte)
    }

    private func syntax(_ what: String, at offset: Int) -> Failure {
        Failure(kind: .syntax, problem: "invalid JSON at byte \(offset): \(what)", offset: offset)
    }

    private func literal(_ word: StaticString, _ bytes: UnsafeRawBufferPointer, at start: Int) throws(Failure) -> Int {
        let length = word.utf8CodeUnitCount
        guard start + length <= bytes.count,
              (0..<length).allSatisfy({ bytes[start + $0] == word.utf8Start[$0] }) else {
            throw syntax("expected '\(word)'", at: start)
        }
        return start + length
    }

    /// The index after the number starting at `start`; a number no `Double` holds is refused.
    private mutating func number(_ bytes: UnsafeRawBufferPointer, from start: Int) throws(Failure) -> Int {
        var index = start
        func digits() -> Int {
            let first = index
            while index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) { index += 1 }
            return index - first
        }
        if bytes[index] == UInt8(ascii: "-") { index += 1 }
        guard index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) else {
            throw syntax("a number needs a digit after '-'", at: index)
        }
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
        } else {
            _ = digits()
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            guard digits() > 0 else { throw syntax("a number needs a digit after '.'", at: index) }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
            guard digits() > 0 else { throw syntax("a number needs a digit in its exponent", at: index) }
        }
        let text = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
        // Too large for a Double, or so small that it reads as 0 without being 0 (`5e-999`):
        // Foundation's decoders refuse both, and JSONDecoder some zeros with an exponent too
        // (`0.000000e1`): a zero is written without one.
        let hasExponent = text.contains { $0 == "e" || $0 == "E" }
        let mantissa = text.prefix { $0 != "e" && $0 != "E" }
        guard let value = Double(text), value.isFinite,
              value != 0 || (!hasExponent && !mantissa.contains(where: { ("1"..."9").contains($0) })) else {
            let shown = text.count > 32 ? String(text.prefix(32)) + "…" : text
            throw Failure(kind: .number, problem: "JSON number \(shown) is out of range at byte \(start)", offset: start)
        }
        if recordingNonIntegers, Int64(text) == nil { nonIntegers.append(start..<index) }
        return index
    }

    /// The index after the string whose opening quote is at `start`.
    private func string(_ bytes: UnsafeRawBufferPointer, from start: Int) throws(Failure) -> Int {
        var index = start + 1
        var length = 0
        let count = bytes.count
        while true {
            guard index < count else { throw syntax("unterminated string", at: start) }
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "\""):
                return index + 1
            case UInt8(ascii: "\\"):
                guard index + 1 < count else { throw syntax("unterminated string", at: start) }
                let escaped = bytes[index + 1]
                switch escaped {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"), UInt8(ascii: "f"),
                     UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
                    length += 1
                    index += 2
                case UInt8(ascii: "u"):
                    let unit = try hex(bytes, at: index)
                    switch unit {
                    case 0xD800...0xDBFF:
                        guard index + 11 < count, bytes[index + 6] == UInt8(ascii: "\\"), bytes[index + 7] == UInt8(ascii: "u"),
                              (0xDC00...0xDFFF).contains(try hex(bytes, at: index + 6)) else {
                            throw syntax("lone surrogate \\u\(String(unit, radix: 16)) in a string", at: index)
                        }
                        length += 4
                        index += 12
                    case 0xDC00...0xDFFF:
                        throw syntax("lone surrogate \\u\(String(unit, radix: 16)) in a string", at: index)
                    default:
                        length += unit < 0x80 ? 1 : unit < 0x800 ? 2 : 3
                        index += 6
                    }
                default:
                    throw syntax("invalid escape '\\\(Character(UnicodeScalar(escaped)))' in a string", at: index)
                }
            case 0x00..<0x20:
                throw syntax("control character U+\(String(format: "%04X", byte)) in a string", at: index)
            case 0x20..<0x80:
                length += 1
                index += 1
            default:
                let width = try utf8Width(bytes, at: index)
                length += width
                index += width
            }
            if length > limits.maxStringBytes {
                throw Failure(kind: .string, problem: "JSON string longer than \(limits.maxStringBytes) bytes at byte \(start)", offset: start)
            }
        }
    }

    /// The code unit of `\uXXXX` at `index` (the backslash).
    private func hex(_ bytes: UnsafeRawBufferPointer, at index: Int) throws(Failure) -> UInt32 {
        guard index + 5 < bytes.count else { throw syntax("unterminated \\u escape", at: index) }
        var value: UInt32 = 0
        for offset in 2..<6 {
            let byte = bytes[index + offset]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw syntax("invalid \\u escape", at: index)
            }
            value = value << 4 | UInt32(digit)
        }
        return value
    }

    /// The length of the well-formed UTF-8 sequence at `index` (RFC 3629: no overlong forms,
    /// no surrogates, nothing above U+10FFFF).
    private func utf8Width(_ bytes: UnsafeRawBufferPointer, at index: Int) throws(Failure) -> Int {
        let lead = bytes[index]
        let width: Int
        var second: ClosedRange<UInt8> = 0x80...0xBF
        switch lead {
        case 0xC2...0xDF: width = 2
        case 0xE0: width = 3; second = 0xA0...0xBF
        case 0xE1...0xEC, 0xEE...0xEF: width = 3
        case 0xED: width = 3; second = 0x80...0x9F
        case 0xF0: width = 4; second = 0x90...0xBF
        case 0xF1...0xF3: width = 4
        case 0xF4: width = 4; second = 0x80...0x8F
        default: throw syntax("invalid UTF-8 in a string", at: index)
        }
        guard index + width <= bytes.count, second.contains(bytes[index + 1]),
              (2..<width).allSatisfy({ (0x80...0xBF).contains(bytes[index + $0]) }) else {
            throw syntax("invalid UTF-8 in a string", at: index)
        }
        return width
    }
}
