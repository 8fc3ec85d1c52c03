import Foundation
import Paperboy
import PaperboyClient
import PaperboyFraming
import PaperboyTesting
import Testing

/// The client's `HELLO` timeout (10 s, `ClientConnection.handshakeTimeout`) takes no clock, so
/// it is waited out in real time here: one test, alone in its suite. Its bounds hold on a loaded
/// machine: never sooner than the timeout, within six times it.
@Suite("PaperboyClient's handshake, in real time", .serialized, .timeLimit(.minutes(2)))
struct HandshakeTimeoutTests {
    let folder = TempFolder(prefix: "pbc")

    @Test func aServerThatAcceptsAndNeverAnswersHelloFailsTheConnection() async throws {
        let fake = try FakeDaemon(in: folder.file("run"))
        let started = ContinuousClock.now
        do {
            _ = try await PaperboyClient.connect(socket: fake.socket, name: "patient")
            Issue.record("connected to a server that never answered HELLO")
        } catch {
            let waited = ContinuousClock.now - started
            #expect(error.code == .transport)
            #expect(error.isRetryable)
            #expect(error.message.hasPrefix("cannot talk to the daemon at \(fake.socket.path): timedOut"), "\(error.message)")
            #expect(waited >= .seconds(10), "gave up after \(waited)")
            #expect(waited < .seconds(60), "gave up after \(waited)")
        }
        try await eventually("the client's HELLO read by the server") { fake.hello != nil }
        let hello = try #require(fake.hello)
        let fields = try JSONSerialization.jsonObject(with: hello.payload) as? [String: Any]
        #expect(hello.kind == "HELLO")
        #expect(fields?["protocols"] as? [Int] == [1])
        #expect(fields?["client"] as? String == "patient")
    }
}
