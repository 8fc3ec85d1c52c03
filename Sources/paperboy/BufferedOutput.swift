import Foundation
import Paperboy

/// Standard output written in blocks of 64 KiB: a listing of 100,000 assets made one system
/// call per line through ``Console/line(_:)``.
final class BufferedOutput {
    private var buffer: [UInt8] = []
    private static let blockSize = 1 << 16

    init() { buffer.reserveCapacity(Self.blockSize) }

    deinit { flush() }

    /// Appends `text` as it is.
    func write(_ text: some StringProtocol) {
        buffer.append(contentsOf: text.utf8)
        if buffer.count >= Self.blockSize { flush() }
    }

    func write(_ byte: UInt8) {
        buffer.append(byte)
        if buffer.count >= Self.blockSize { flush() }
    }

    /// Appends a line with control characters escaped, as ``Console/line(_:)`` writes it.
    func line(_ text: String) {
        // Printable ASCII needs no look at its scalars.
        if text.utf8.allSatisfy({ ($0 >= 0x20 && $0 < 0x7F) || $0 == 0x09 || $0 == 0x0A }) {
            write(text)
        } else {
            write(TerminalText.escape(text, keepingNewlines: true))
        }
        write(0x0A)
    }

    /// Writes what is buffered.
    func flush() {
        guard !buffer.isEmpty else { return }
        FileHandle.standardOutput.write(Data(buffer))
        buffer.removeAll(keepingCapacity: true)
    }
}

/// JSON text written value by value into a ``BufferedOutput``, laid out as `JSONEncoder`'s
/// `.prettyPrinted` output (two spaces per level, `"key" : value`), for documents too big to
/// build first. The caller writes keys in sorted order. DEL, C1 and bidi controls in strings
/// are written as `\u` escapes, as ``Console/json(_:)`` does.
struct JSONTextWriter {
    let output: BufferedOutput
    private var depth = 0
    /// No element written yet in the innermost container.
    private var first = true
    private var afterKey = false

    init(output: BufferedOutput) { self.output = output }

    mutating func beginObject() { open(UInt8(ascii: "{")) }
    mutating func endObject() { close(UInt8(ascii: "}")) }
    mutating func beginArray() { open(UInt8(ascii: "[")) }
    mutating func endArray() { close(UInt8(ascii: "]")) }

    mutating func key(_ name: String) {
        startElement()
        string(name)
        output.write(" : ")
        afterKey = true
    }

    mutating func field(_ name: String, _ value: String) {
        key(name)
        startValue()
        string(value)
    }

    mutating func field(_ name: String, _ value: some BinaryInteger) {
        key(name)
        startValue()
        output.write(String(value))
    }

    mutating func field(_ name: String, _ value: Bool) {
        key(name)
        startValue()
        output.write(value ? "true" : "false")
    }

    /// A value through `JSONEncoder` (small values only), indented to its place.
    mutating func encoded(_ value: some Encodable) throws {
        startValue()
        let text = String(decoding: Console.jsonEscapingControls(try JSONCoding.document.encoder.encode(value)), as: UTF8.self)
        output.write(text.replacingOccurrences(of: "\n", with: "\n" + String(repeating: "  ", count: depth)))
    }

    private mutating func open(_ bracket: UInt8) {
        startValue()
        output.write(bracket)
        depth += 1
        first = true
    }

    private mutating func close(_ bracket: UInt8) {
        depth -= 1
        // An empty container is written with an empty line, as JSONEncoder does.
        output.write(first ? "\n\n" : "\n")
        indent()
        output.write(bracket)
        first = false
    }

    private mutating func startValue() {
        if afterKey {
            afterKey = false
        } else if depth > 0 {
            startElement()
        }
    }

    private mutating func startElement() {
        if !first { output.write(UInt8(ascii: ",")) }
        output.write(0x0A)
        indent()
        first = false
    }

    private func indent() {
        for _ in 0..<depth { output.write("  ") }
    }

    private func string(_ text: String) {
        output.write(UInt8(ascii: "\""))
        if text.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "\\") }) {
            output.write(text)
        } else {
            for scalar in text.unicodeScalars {
                switch scalar {
                case "\"": output.write("\\\"")
                case "\\": output.write("\\\\")
                case "\n": output.write("\\n")
                case "\r": output.write("\\r")
                case "\t": output.write("\\t")
                case "\u{08}": output.write("\\b")
                case "\u{0C}": output.write("\\f")
                case _ where scalar.value < 0x20 || TerminalText.needsEscape(scalar):
                    let hex = String(scalar.value, radix: 16, uppercase: true)
                    output.write("\\u" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex)
                default:
                    output.write(String(scalar))
                }
            }
        }
        output.write(UInt8(ascii: "\""))
    }
}
