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

@_cdecl("LLVMFuzzerTestOneInput")
func fuzz(_ bytes: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: bytes, count: count), as: UTF8.self)
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
