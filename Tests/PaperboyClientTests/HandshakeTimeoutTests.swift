import Foundation
import Paperboy
import PaperboyClient
import PaperboyFraming
import PaperboyTesting
import Testing

/// The client's `HELLO` timeout (10 s) on a test clock: what the client says, and that it gives up
/// exactly then (PaperboyCLITests' `PaperboyClientWriteTests` times the same wait to the millisecond).
@Suite("PaperboyClient's handshake", .timeLimit(.minutes(2)))
struct HandshakeTimeoutTests {
    let folder = TempFolder(prefix: "pbc")

    @Test func aServerThatAcceptsAndNeverAnswersHelloFailsTheConnection() async throws {
        let fake = try FakeDaemon(in: folder.file("run"))
        let clock = TestClock()
        let connecting = Task { try await Library.connect(socket: fake.socket, name: "patient", clock: clock) }
        try await clock.waitForSleepers(1)
        try await eventually("the client's HELLO read by the server") { fake.hello != nil }
        clock.advance(by: .seconds(10))
        do {
            _ = try await connecting.value
            Issue.record("connected to a server that never answered HELLO")
        } catch let error as LibraryError {
            #expect(error.code == .transport)
            #expect(error.isRetryable)
            #expect(error.message == "the daemon at \(fake.socket.path) did not answer HELLO within 10.0 seconds", "\(error.message)")
        }
        let hello = try #require(fake.hello)
        let fields = try JSONSerialization.jsonObject(with: hello.payload) as? [String: Any]
        #expect(hello.kind == "HELLO")
        #expect(fields?["protocols"] as? [Int] == [1])
        #expect(fields?["client"] as? String == "patient")
    }
}
