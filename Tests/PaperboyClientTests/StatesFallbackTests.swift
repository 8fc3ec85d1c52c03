import Foundation
import Paperboy
import PaperboyClient
import PaperboyFraming
import PaperboyTesting
import Synchronization
import Testing

/// What a client reads of a daemon that predates a request kind (0.1.0 answers `STATES`,
/// `COUNTS` and `ACTIVITY` with `unknown-kind`): the same from the requests it knows, and the
/// refusal is remembered for the connection (one rule for every newer kind: `newerOrOlder`).
@Suite("A settle's states from a daemon", .timeLimit(.minutes(2)))
struct StatesFallbackTests {
    let folder = TempFolder(prefix: "pbs")

    /// The kinds of the frames a fake daemon read, in order.
    private final class Asked: Sendable {
        let kinds = Mutex<[String]>([])
    }

    /// A 0.1.0 daemon of one issue `i` with assets `a` (delivered) and `b` (downloading), which
    /// refuses `refused`; `asked` gets the kind of every frame it reads.
    /// With `firstPageOf` also, that kind's first request is answered with a page and a `next`.
    private func oldDaemon(refusing refused: String, firstPageOf paged: (kind: String, page: String)? = nil,
                           asked: Asked) throws -> FakeDaemon {
        let refusal: @Sendable (Int) -> Data = { id in
            Frame.encode("ERROR", Data(#"{"id":\#(id),"code":"unknown-kind","message":"unknown message kind \#(refused)"}"#.utf8))
        }
        let answered = Mutex(false)
        let firstOrRefusal: @Sendable (Int) -> Data = { id in
            guard let paged, !answered.withLock({ $0 }) else { return refusal(id) }
            answered.withLock { $0 = true }
            return Frame.encode("OK", Data(#"{"id":\#(id),\#(paged.page)}"#.utf8))
        }
        let answers: [String: @Sendable (Int) -> Data] = [
            "SUBSCRIBE": { id in Frame.encode("OK", Data(#"{"id":\#(id)}"#.utf8)) },
            refused: firstOrRefusal,
            "SHELF": { id in
                Frame.encode("OK", Data(#"""
                    {"id":\#(id),"library_path":"/lib","badge":0,"issues":[
                     {"name":"i","date":"2026-11-21T00:00:00Z","status":"downloading","is_new":false,"content_path":"/lib/issues/i"}]}
                    """#.utf8))
            },
            "ASSETS": { id in
                Frame.encode("OK", Data(#"""
                    {"id":\#(id),"assets":[
                     {"id":"a","issue":"i","request":{"url":"https://example.com/a"},"state":{"name":"delivered"},"total_bytes_written":3,"attempts":0},
                     {"id":"b","issue":"i","request":{"url":"https://example.com/b"},"state":{"name":"downloading"},"total_bytes_written":0,"attempts":0}]}
                    """#.utf8))
            },
        ]
        return try FakeDaemon(in: folder.file("run")) { fd in
            let hello = Frame.encode("HELLO", Data(#"{"protocol":1,"paperboy":"0.1.0","library":"/lib"}"#.utf8))
            try? FrameWriter.write(hello, to: fd, isSocket: true)
            var reader = FrameReader()
            while let frame = try? reader.next(from: fd, maxLength: { _ in 1 << 16 }, wait: { _ in }) {
                asked.kinds.withLock { $0.append(frame.kind) }
                let id = (try? JSONSerialization.jsonObject(with: frame.payload) as? [String: Any])?["id"] as? Int ?? 0
                guard let answer = answers[frame.kind] else { return }
                try? FrameWriter.write(answer(id), to: fd, isSocket: true)
            }
        }
    }

    /// A daemon without `STATES` answers it `unknown-kind`: the same states are read from
    /// `ASSETS` pages instead, and nothing else is asked; the next sweep reads `ASSETS` straight
    /// away (not `STATES` again at every sweep).
    @Test func aDaemonWithoutStatesIsReadThroughItsAssetsPages() async throws {
        let asked = Asked()
        let fake = try oldDaemon(refusing: "STATES", asked: asked)
        let client = try await Library.connect(socket: fake.socket, name: "settle")
        defer { client.disconnect() }
        let backend = try #require(client.daemon)
        for _ in 0..<2 {
            var seen: [String: AssetState] = [:]
            try await backend.forEachState(ofIssue: "i") { seen[$0] = $1 }
            #expect(seen == ["a": .delivered, "b": .downloading])
        }
        #expect(asked.kinds.withLock { $0 } == ["SUBSCRIBE", "STATES", "ASSETS", "ASSETS"])
    }

    /// `COUNTS` from a daemon without it: counted from `SHELF` and `ASSETS`, and not asked again.
    @Test func aDaemonWithoutCountsIsCountedFromItsListingsAndNotAskedAgain() async throws {
        let asked = Asked()
        let fake = try oldDaemon(refusing: "COUNTS", asked: asked)
        let client = try await Library.connect(socket: fake.socket, name: "counts")
        defer { client.disconnect() }
        let backend = try #require(client.daemon)
        for _ in 0..<2 {
            let counts = try await backend.counts()
            #expect(counts.count == 1 && counts["i"]?.total == 2, "\(counts)")
        }
        #expect(asked.kinds.withLock { $0 } == ["SUBSCRIBE", "COUNTS", "SHELF", "ASSETS", "SHELF", "ASSETS"])
    }

    /// A refusal after a first page was answered is no "older daemon": the states told from that
    /// page are not told again from `ASSETS`; the sweep fails, naming what happened.
    @Test func aRefusalAfterTheFirstPageFailsTheSweepInsteadOfStartingOver() async throws {
        let asked = Asked()
        let page = #""states":[{"asset":"a","state":{"name":"delivered"}}],"next":"c1""#
        let fake = try oldDaemon(refusing: "STATES", firstPageOf: ("STATES", page), asked: asked)
        let client = try await Library.connect(socket: fake.socket, name: "pages")
        defer { client.disconnect() }
        let backend = try #require(client.daemon)
        var told: [String] = []
        let error = await #expect(throws: LibraryError.self) {
            try await backend.forEachState(ofIssue: "i") { id, _ in told.append(id) }
        }
        #expect(error?.message.contains("refused STATES after answering its first page") == true, "\(String(describing: error))")
        #expect(told == ["a"])
        #expect(asked.kinds.withLock { $0 } == ["SUBSCRIBE", "STATES", "STATES"])
    }
}
