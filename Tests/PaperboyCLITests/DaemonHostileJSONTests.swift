#if canImport(Glibc)
import Glibc
#endif
import Foundation
import PaperboyDaemon
import PaperboyWire
import PaperboyFraming
import PaperboyTestServers
import PaperboyTesting
import Testing

/// Issue 26, case 1: JSON nested a few hundred levels deep, sent to `paperboy daemon` as a process
/// (`paperboy notify --payload -`, and raw `NOTIFY` and `ADDASSET` frames). It used to kill the
/// daemon with SIGSEGV: the connection thread decoding it has a small stack.
@Suite("paperboy daemon: deeply nested JSON", .serialized, .timeLimit(.minutes(3)))
struct DaemonHostileJSONTests {
    let workspace = Workspace()

    /// `{"aps":{"content-available":1},"x":[[[…]]]}` with `levels` arrays.
    static func deepPayload(_ levels: Int) -> String {
        #"{"aps":{"content-available":1},"x":"# + String(repeating: "[", count: levels) + String(repeating: "]", count: levels) + "}"
    }

    @Test func aDeepPushPayloadAndADeepUserInfoGetBadRequestAndTheDaemonGoesOn() async throws {
        let runtime = workspace.path("runtime")
        mkdir(runtime.path, 0o700)
        let config = workspace.write("""
            [library]
            path = "lib"
            """, to: "paperboy.toml")
        let daemon = try await DaemonProcess(config: config, runtime: runtime, log: workspace.path("daemon.log"))
        defer { daemon.process.signal(SIGKILL) }
        let log = { (try? String(contentsOf: daemon.log, encoding: .utf8)) ?? "" }

        // `paperboy notify --payload -`: the payload on standard input, 300 levels deep.
        let payload = workspace.write(Self.deepPayload(300), to: "payload.json")
        let notify = try await CLI.run(
            ["-c", #"exec "$0" notify --payload - --config "$1" < "$2""#, CLI.executable.path, config.path, payload.path],
            environment: ["XDG_RUNTIME_DIR": runtime.path], executable: URL(fileURLWithPath: "/bin/sh"))
        #expect(daemon.process.isRunning, "the daemon died: \(log())")
        // The reader refuses it before it is decoded, in the command (the push payload's door).
        #expect(notify.status == 2, "\(notify.stdout) \(notify.stderr)")
        #expect(notify.stderr.contains("paperboy: push payload: JSON nested deeper than 32 levels at byte 66"), "\(notify.stderr)")

        // The same payload and a `user_info` 250 levels deep (600 bytes) sent straight to the
        // socket: each gets `bad-request` with its id, and the connection answers the next request.
        let userInfo = String(repeating: "[", count: 250) + String(repeating: "]", count: 250)
        let frames = Frame.encode("HELLO", Data(#"{"protocols":[1]}"#.utf8))
            + Frame.encode("NOTIFY", Data(#"{"id":2,"payload":\#(Self.deepPayload(300))}"#.utf8))
            + Frame.encode("ADDASSET", Data(#"{"id":3,"issue":"x","request":{"url":"file:///x"},"user_info":\#(userInfo)}"#.utf8))
            + Frame.encode("STATUS", Data(#"{"id":4}"#.utf8))
        let socket = daemon.socket
        let answers = try await offThePool { try Self.exchange(socket, frames, answers: 4) }
        #expect(daemon.process.isRunning, "the daemon died: \(log())")
        #expect(answers.map(\.kind) == ["HELLO", "ERROR", "ERROR", "OK"], "\(answers.map { String(decoding: $0.payload, as: UTF8.self) })")
        let errors = answers.filter { $0.kind == "ERROR" }.map { (try? JSONSerialization.jsonObject(with: $0.payload)) as? [String: Any] ?? [:] }
        #expect(errors.map { $0["code"] as? String } == ["bad-request", "bad-request"])
        #expect(errors.map { $0["id"] as? Int } == [2, 3])
        #expect(errors.map { $0["message"] as? String } == [
            "daemon request NOTIFY: JSON nested deeper than 64 levels at byte 115",
            "daemon request ADDASSET: JSON nested deeper than 64 levels at byte 125",
        ])
        // It stops as a healthy daemon does.
        _ = await daemon.stop()
        #expect(daemon.process.terminationReason == .exit && daemon.process.terminationStatus == 0, "\(log())")
    }

    /// Sends `bytes` and reads `count` frames (or until the daemon closes), each within 30 s: a
    /// guard against a hang, not a timing.
    static func exchange(_ socket: URL, _ bytes: Data, answers count: Int) throws -> [Frame] {
        let fd = try DaemonSocket.connect(to: socket)
        guard fd >= 0 else { return [] }
        defer { close(fd) }
        try FrameWriter.write(bytes, to: fd, isSocket: true)
        var reader = FrameReader()
        var frames: [Frame] = []
        let wait: (Int32) throws(FrameIOError) -> Void = { fd throws(FrameIOError) in
            var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            if poll(&descriptor, 1, 30_000) <= 0 { throw .timedOut(.seconds(30)) }
        }
        while frames.count < count, let frame = try? reader.next(from: fd, maxLength: { _ in 1 << 20 }, wait: wait) { frames.append(frame) }
        return frames
    }
}
