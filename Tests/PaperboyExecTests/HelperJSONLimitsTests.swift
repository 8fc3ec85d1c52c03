import Foundation
import Paperboy
@testable import PaperboyExec
import PaperboyTesting
import Testing

/// A helper's JSON goes through the one reader: each hostile `ERROR` payload fails the transfer
/// with a protocol error naming the frame and the limit, never a trap.
@Suite("Exec protocol: JSON limits of helper frames", .timeLimit(.minutes(3)))
struct HelperJSONLimitsTests {
    let folder = TempFolder()
    let url = URL(string: "fake://host/file.bin")!

    static let hostile: [(fields: String, problem: String)] = [
        (#""x": "# + String(repeating: "[", count: 70) + String(repeating: "]", count: 70), "JSON nested deeper than 64 levels at byte "),
        (#""x": "# + String(repeating: #"{"a":"#, count: 70) + "1" + String(repeating: "}", count: 70), "JSON nested deeper than 64 levels at byte "),
        (#""x": ""# + String(repeating: "a", count: 16_385) + #"""#, "JSON string longer than 16384 bytes at byte "),
        (#""x": {"# + (0...1024).map { #""k\#($0)":0"# }.joined(separator: ",") + "}", "JSON object of more than 1024 members at byte "),
        (#""x": ["# + Array(repeating: "0", count: 1025).joined(separator: ",") + "]", "JSON array of more than 1024 elements at byte "),
        (#""x": [1, 2"#, "invalid JSON at byte "),
        (#""x": "a<NUL>""#, "invalid JSON at byte "),
        (#""x": "\ud800""#, "invalid JSON at byte "),
        (#""retry_after": 1e999"#, "JSON number 1e999 is out of range at byte "),
    ]

    @Test(arguments: hostile)
    func aHostileErrorPayloadIsAProtocolErrorNamingTheLimit(fields: String, problem: String) async throws {
        let transport = folder.fakeTransport("error", [fields], clock: TestClock())
        defer { transport.retireIdleHelpers() }
        let job = TransferJob(url: url, connectTimeout: .seconds(10), idleTimeout: .seconds(10))
        let error = try #require(await failure(of: transport, job, into: RecordingSink()) as? TransportError)
        #expect(error.code == .protocolError, "\(error)")
        #expect(error.description.contains("sent ERROR JSON out of the limits: \(problem)"), "\(error)")
    }
}
