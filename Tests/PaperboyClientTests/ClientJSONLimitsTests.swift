#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Paperboy
import PaperboyClient
import PaperboyFraming
import PaperboyTesting
import Testing

/// The client reads the daemon's frames through the one reader for outside JSON: a hostile
/// daemon's deep event is dropped and its deep reply fails the request, never a trap of the
/// client's reading thread.
@Suite("The daemon client's JSON limits", .timeLimit(.minutes(1)))
struct ClientJSONLimitsTests {
    let folder = TempFolder(prefix: "pbj")

    static func nested(_ levels: Int) -> String {
        String(repeating: "[", count: levels) + String(repeating: "]", count: levels)
    }

    @Test func aDeepEventIsDroppedAndADeepReplyFailsItsRequestNamingTheLimit() async throws {
        let fake = try FakeDaemon(in: folder.file("run")) { fd in
            let hello = Frame.encode("HELLO", Data(#"{"protocol":1,"paperboy":"0.1.0","library":"/lib"}"#.utf8))
            try? FrameWriter.write(hello, to: fd, isSocket: true)
            var reader = FrameReader()
            // The connection's SUBSCRIBE, answered; then the request that gets the deep reply.
            guard (try? reader.next(from: fd, maxLength: { _ in 1 << 16 }, wait: { _ in })) != nil else { return }
            try? FrameWriter.write(Frame.encode("OK", Data(#"{"id":1}"#.utf8)), to: fd, isSocket: true)
            guard (try? reader.next(from: fd, maxLength: { _ in 1 << 16 }, wait: { _ in })) != nil else { return }
            let event = Frame.encode("EVENT", Data(#"{"event":"badge","x":\#(Self.nested(300))}"#.utf8))
            let reply = Frame.encode("OK", Data(#"{"id":2,"x":\#(Self.nested(300))}"#.utf8))
            try? FrameWriter.write(event + reply, to: fd, isSocket: true)
        }
        let client = try await Library.connect(socket: fake.socket, name: "wary")
        defer { client.disconnect() }
        do {
            _ = try await client.issues()
            Issue.record("a reply nested 300 levels was accepted")
        } catch {
            #expect(error.code == .transport)
            #expect(error.message == "the daemon at \(fake.socket.path) answered with daemon reply OK: JSON nested deeper than 64 levels at byte 75",
                    "\(error.message)")
        }
    }
}
