import Foundation
import FuzzSupport
@testable import Paperboy

/// The bounded reader every door's outside JSON goes through (`JSONReader.check`), with small
/// limits so that mutations reach each of them, and Foundation as the reference reader.
///
/// Promises:
/// - what the reader accepts, Foundation accepts, and it lies within every limit (depth, elements
///   per array, members per object, string bytes, total bytes) with every number a finite `Double`;
/// - it decodes as a `JSONValue` on a thread with the limits' `threadStackSize`, and encodes back;
/// - a refusal names the door, stops at a byte inside the input, and a refusal for a limit is
///   true: the document (when Foundation reads it) does exceed that limit;
/// - nothing traps, whatever the bytes.
@main
enum FuzzJSON {
    static func main() { Fuzzer.main(fuzz) }
}

let limits = JSONReader.Limits(maxDepth: 8, maxBytes: 4_096, maxElements: 16, maxMembers: 12, maxStringBytes: 48)
let reader = JSONReader("fuzz door", limits: limits)

/// The largest depth, array, object and string (UTF-8 bytes, keys too) of a parsed document,
/// and whether every number is finite. Recursive: only called on documents that parsed, and
/// the depth of those is bounded by the input's size (16 KiB at most) and checked first.
struct Shape {
    var depth = 0
    var elements = 0
    var members = 0
    var stringBytes = 0
    var finite = true

    init(_ value: Any, level: Int = 0) {
        visit(value, level: level)
    }

    private mutating func visit(_ value: Any, level: Int) {
        switch value {
        case let array as [Any]:
            depth = max(depth, level + 1)
            elements = max(elements, array.count)
            for element in array { visit(element, level: level + 1) }
        case let object as [String: Any]:
            depth = max(depth, level + 1)
            members = max(members, object.count)
            for (key, member) in object {
                stringBytes = max(stringBytes, key.utf8.count)
                visit(member, level: level + 1)
            }
        case let text as String:
            stringBytes = max(stringBytes, text.utf8.count)
        case let number as NSNumber:
            if !number.doubleValue.isFinite { finite = false }
        default:
            break
        }
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
func fuzz(_ bytes: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    let input = Fuzzer.data(bytes, count)
    let checked: CheckedJSON
    do {
        checked = try reader.check(input)
    } catch {
        refused(input, error)
        return 0
    }
    guard let object = try? JSONSerialization.jsonObject(with: input, options: .fragmentsAllowed) else {
        Fuzzer.expect(false, "accepted, but Foundation refuses it")
        return 0
    }
    let shape = Shape(object)
    Fuzzer.expect(input.count <= limits.maxBytes, "accepted \(input.count) bytes")
    Fuzzer.expect(shape.depth <= limits.maxDepth, "accepted \(shape.depth) levels")
    Fuzzer.expect(shape.elements <= limits.maxElements, "accepted an array of \(shape.elements)")
    Fuzzer.expect(shape.members <= limits.maxMembers, "accepted an object of \(shape.members) members")
    Fuzzer.expect(shape.stringBytes <= limits.maxStringBytes, "accepted a string of \(shape.stringBytes) bytes")
    Fuzzer.expect(shape.finite, "accepted a number no Double holds")
    Fuzzer.onThread(stackSize: limits.threadStackSize) {
        guard let value = try? checked.decode(JSONValue.self) else {
            Fuzzer.expect(false, "checked JSON does not decode as a JSONValue")
            return
        }
        let encoded = try? JSONEncoder().encode(value)
        Fuzzer.expect(encoded.flatMap { try? JSONDecoder().decode(JSONValue.self, from: $0) } == value,
                      "a checked value does not survive encoding")
    }
    return 0
}

/// A refusal: it names the door, its place is inside the input, and a limit it names is exceeded.
func refused(_ input: Data, _ error: JSONInputError) {
    Fuzzer.expect(error.description.hasPrefix("fuzz door: "), "the error does not name the door: \(error)")
    if let offset = error.offset {
        Fuzzer.expect(offset >= 0 && offset <= input.count, "the error's byte \(offset) is outside \(input.count) bytes")
    }
    if error.kind == .size {
        Fuzzer.expect(input.count > limits.maxBytes, "refused for size at \(input.count) bytes")
    }
    // Foundation keeps the last of duplicate keys, so what it reads of an object can be smaller
    // than what was written: limits are measured on documents without objects. Foundation
    // recurses too: only on shallow ones.
    guard !input.contains(UInt8(ascii: "{")), nestingBound(input) <= 64,
          let object = try? JSONSerialization.jsonObject(with: input, options: .fragmentsAllowed)
    else { return }
    let shape = Shape(object)
    switch error.kind {
    case .depth: Fuzzer.expect(shape.depth > limits.maxDepth, "refused for depth at \(shape.depth) levels")
    case .elements: Fuzzer.expect(shape.elements > limits.maxElements, "refused for elements at \(shape.elements)")
    case .string: Fuzzer.expect(shape.stringBytes > limits.maxStringBytes, "refused for a string of \(shape.stringBytes) bytes")
    case .members, .size, .number, .syntax: break
    }
}

/// An upper bound of the nesting: the count of `[` and `{` bytes.
func nestingBound(_ input: Data) -> Int {
    input.reduce(0) { $0 + ($1 == UInt8(ascii: "[") || $1 == UInt8(ascii: "{") ? 1 : 0) }
}
