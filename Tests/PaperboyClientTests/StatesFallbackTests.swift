import Foundation
import Paperboy
import PaperboyClient
import PaperboyFraming
import PaperboyTesting
import Synchronization
import Testing

/// What a settle reads of a daemon: `STATES` pages, or from a daemon that predates them, the
/// `ASSETS` pages it knows.
@Suite("A settle's states from a daemon", .timeLimit(.minutes(2)))
struct StatesFallbackTests {
    let folder = TempFolder(prefix: "pbs")

    /// A daemon without `STATES` (0.1.0) answers it `unknown-kind`: the same states are read from
    /// `ASSETS` pages instead, and nothing else is asked.
    @Test func aDaemonWithoutStatesIsReadThroughItsAssetsPages() async throws {
        let asked = Mutex<[String]>([])
        let fake = try FakeDaemon(in: folder.file("run")) { fd in
            let hello = Frame.encode("HELLO", Data(#"{"protocol":1,"paperboy":"0.1.0","library":"/lib"}"#.utf8))
            try? FrameWriter.write(hello, to: fd, isSocket: true)
            var reader = FrameReader()
            let answers: [String: (Int) -> Data] = [
                "SUBSCRIBE": { id in Frame.encode("OK", Data(#"{"id":\#(id)}"#.utf8)) },
                "STATES": { id in
                    Frame.encode("ERROR", Data(#"{"id":\#(id),"code":"unknown-kind","message":"unknown message kind STATES"}"#.utf8))
                },
                "ASSETS": { id in
                    Frame.encode("OK", Data(#"""
                        {"id":\#(id),"assets":[
                         {"id":"a","issue":"i","state":{"name":"delivered"},"total_bytes_written":3,"attempts":0},
                         {"id":"b","issue":"i","state":{"name":"downloading"},"total_bytes_written":0,"attempts":0}]}
                        """#.utf8))
                },
            ]
            while let frame = try? reader.next(from: fd, maxLength: { _ in 1 << 16 }, wait: { _ in }) {
                asked.withLock { $0.append(frame.kind) }
                let id = (try? JSONSerialization.jsonObject(with: frame.payload) as? [String: Any])?["id"] as? Int ?? 0
                guard let answer = answers[frame.kind] else { return }
                try? FrameWriter.write(answer(id), to: fd, isSocket: true)
            }
        }
        let client = try await Library.connect(socket: fake.socket, name: "settle")
        defer { client.disconnect() }
        let backend = try #require(client.daemon)
        var seen: [String: AssetState] = [:]
        try await backend.forEachState(ofIssue: "i") { seen[$0] = $1 }
        #expect(seen == ["a": .delivered, "b": .downloading])
        #expect(asked.withLock { $0 } == ["SUBSCRIBE", "STATES", "ASSETS"])
    }
}
