import Foundation
import FuzzSupport
@testable import Paperboy

/// The push payload (`paperboy notify --payload`, `Library.contentAvailable`): JSON from the
/// push service, checked and decoded by the reader the command uses (`JSONReader.pushPayload`)
/// on the command's thread, then asked whether it says `content-available: 1`. (Through the daemon, the same payload travels in a `NOTIFY` frame:
/// FuzzDaemon.)
///
/// Promises: a payload is refused or decoded, and a decoded one encodes and decodes back to
/// itself (the daemon and its clients pass `userInfo` and payloads on); `contentAvailable`
/// decides without trapping.
@main
enum FuzzPush {
    static func main() { Fuzzer.main(fuzz) }
}

let library: Library = {
    var configuration = Library.Configuration()
    configuration.syncsToDisk = false
    configuration.networkMonitor = FixedNetworkMonitor(NetworkStatus(kind: .wired))
    do {
        return try Library.open(at: Fuzzer.scratch.appendingPathComponent("library"), transports: TransportRegistry([]),
                                configuration: configuration)
    } catch {
        fatalError("cannot open the library: \(error)")
    }
}()

@_cdecl("LLVMFuzzerTestOneInput")
func fuzz(_ bytes: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    guard let payload = try? JSONReader.pushPayload.decode(JSONValue.self, from: Fuzzer.data(bytes, count)) else { return 0 }
    let encoded = try? JSONEncoder().encode(payload)
    Fuzzer.expect(encoded.flatMap { try? JSONDecoder().decode(JSONValue.self, from: $0) } == payload,
                  "the payload does not survive encoding: \(encoded.map { String(decoding: $0, as: UTF8.self) } ?? "not encodable")")
    // After the first refresh every trigger is throttled for years: no write per input.
    // The in-process backend's synchronous form: the same decision `Library.contentAvailable` awaits.
    _ = try? library.local?.contentAvailable(payload: payload, throttle: .seconds(100 * 365 * 86_400), dontThrottle: false, now: nil)
    return 0
}
