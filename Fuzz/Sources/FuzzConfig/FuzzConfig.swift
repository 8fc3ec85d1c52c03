import Foundation
import FuzzSupport
import PaperboyConfig

/// The configuration reader (`PaperboyConfiguration.parse`: TOML, then typed values), what every
/// command and the daemon's reload run on `paperboy.toml`.
///
/// Promises: an input is refused with a `ConfigError` or parsed; neither the error nor the
/// configuration's description shows the value of a secret read through `*_env`.
@main
enum FuzzConfig {
    static func main() { Fuzzer.main(fuzz) }
}

let secret = "pb-fuzz-secret-4711"
let environment = ["HOME": Fuzzer.scratch.path, "FUZZ_PASSWORD": secret, "FUZZ_TOKEN": secret]
let fileURL = Fuzzer.scratch.appendingPathComponent("paperboy.toml")

/// Whether `text` may trip one of toml++ 3.4.0's assertions found by this target (known issues,
/// `ConfigFileFuzzFindingsTests`): a table header whose key does not start with a bare-key
/// character or a quote (`[=]`, `[ é]`, `[[#]]`), or a `}` where an array expects a value
/// (`a = [}]`, `a = [1, }]`), or a date followed by `T` and no digit with a time further on
/// (`2026-11-21Tm23:00:00`). Such inputs are skipped, generously, so that the fuzzer goes on
/// finding other things; remove this when TOMLKit ships a toml++ that refuses them.
func tripsAKnownTOMLAssertion(_ text: String) -> Bool {
    let bytes = Array(text.utf8)
    func isDigit(_ index: Int) -> Bool { bytes.indices.contains(index) && (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) }
    for index in bytes.indices where (bytes[index] | 0x20) == UInt8(ascii: "t") && index >= 3
        && bytes[index - 3] == UInt8(ascii: "-") && isDigit(index - 2) && isDigit(index - 1) && !isDigit(index + 1) {
        return true
    }
    var previous: UInt8 = 0
    var inComment = false
    for byte in text.utf8 {
        if inComment {
            inComment = byte != UInt8(ascii: "\n")
            continue
        }
        switch byte {
        case UInt8(ascii: "#"): inComment = true
        case UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\r"), UInt8(ascii: "\n"): break
        case UInt8(ascii: "}") where previous == UInt8(ascii: "[") || previous == UInt8(ascii: ","): return true
        default: previous = byte
        }
    }
    func startsAKey(_ byte: UInt8?) -> Bool {
        guard let byte else { return false }
        return (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte | 0x20) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
            || [UInt8(ascii: "_"), UInt8(ascii: "-"), UInt8(ascii: "\""), UInt8(ascii: "'"), UInt8(ascii: "]")].contains(byte)
    }
    // toml++ skips a byte order mark before the first line.
    let body = text.utf8.starts(with: [0xEF, 0xBB, 0xBF]) ? text.utf8.dropFirst(3) : text.utf8[...]
    for line in body.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false) {
        var rest = line.drop { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") }
        guard rest.first == UInt8(ascii: "[") else { continue }
        rest = rest.dropFirst()
        if rest.first == UInt8(ascii: "[") { rest = rest.dropFirst() }
        rest = rest.drop { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") }
        if !startsAKey(rest.first) { return true }
    }
    return false
}

@_cdecl("LLVMFuzzerTestOneInput")
func fuzz(_ bytes: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: bytes, count: count), as: UTF8.self)
    if tripsAKnownTOMLAssertion(text) { return 0 }
    // A secret written in the file itself may be echoed; only one read from the environment may not.
    let checksSecret = !text.contains(secret)
    do {
        let configuration = try PaperboyConfiguration.parse(text, fileURL: fileURL, environment: environment)
        let shown = String(describing: configuration) + String(reflecting: configuration)
        Fuzzer.expect(!checksSecret || !shown.contains(secret), "the configuration's description shows a secret")
    } catch {
        Fuzzer.expect(!checksSecret || !error.description.contains(secret), "the error shows a secret: \(error)")
    }
    return 0
}
