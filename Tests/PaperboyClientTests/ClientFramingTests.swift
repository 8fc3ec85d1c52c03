#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Paperboy
import PaperboyClient
import PaperboyFraming
import PaperboyTesting
import Testing

/// A daemon that breaks the framing ends the connection, and the client says how.
@Suite("The daemon client's framing", .timeLimit(.minutes(2)))
struct ClientFramingTests {
    let folder = TempFolder(prefix: "pbf")

    @Test func aFrameOverTheLimitFailsTheRequestNamingItsSizeAndTheLimit() async throws {
        let fake = try FakeDaemon(in: folder.file("run")) { fd in
            let hello = Frame.encode("HELLO", Data(#"{"protocol":1,"paperboy":"0.1.0","library":"/lib"}"#.utf8))
            try? FrameWriter.write(hello, to: fd, isSocket: true)
            var reader = FrameReader()
            // The connection's SUBSCRIBE, answered; then the request answered with a header alone.
            guard (try? reader.next(from: fd, maxLength: { _ in 1 << 16 }, wait: { _ in })) != nil else { return }
            try? FrameWriter.write(Frame.encode("OK", Data(#"{"id":1}"#.utf8)), to: fd, isSocket: true)
            guard (try? reader.next(from: fd, maxLength: { _ in 1 << 16 }, wait: { _ in })) != nil else { return }
            try? FrameWriter.write(Data("OK 262145\n".utf8), to: fd, isSocket: true)
        }
        let client = try await Library.connect(socket: fake.socket, name: "wary")
        defer { client.disconnect() }
        do {
            _ = try await client.issues()
            Issue.record("an answer over the frame limit was accepted")
        } catch {
            #expect(error.code == .transport)
            #expect(error.isRetryable)
            #expect(error.message == "the daemon at \(fake.socket.path) closed the connection: OK frame of 262145 bytes; the limit is 262144",
                    "\(error.message)")
        }
    }
}
