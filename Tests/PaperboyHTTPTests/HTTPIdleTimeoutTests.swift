import Foundation
import Paperboy
import PaperboyHTTP
import PaperboyTestServers
import PaperboyTesting
import Testing

/// The HTTP transport's idle timeout, in real time: the curl thread keeps its own clock, which a
/// test cannot drive. One at a time; what is asserted is an order of events (a transfer held
/// through another's timeout) or a lower bound, which a loaded machine cannot break.
@Suite("HTTP idle timeout in real time", .serialized, .timeLimit(.minutes(3)))
struct HTTPIdleTimeoutTests {
    /// The test file, made once on a thread of its own: megabytes take a debug build tens of
    /// milliseconds, too long for the cooperative pool (and made by every test at once, even
    /// for a thread each).
    static let made = Task { try await offThePool { randomData(3 << 20 + 17) } }
    static func makeData() async throws -> Data { try await made.value }

    /// A transfer held by its sink's push-back outlives another one, from a silent source on the
    /// same curl thread with the same timeout, started after the hold: that one timing out shows
    /// the curl thread looked for stalls after the held transfer had been paused for longer than
    /// the timeout, and found it not stalled.
    @Test(arguments: [false, true])
    func aPushBackLongerThanTheIdleTimeoutIsNotAStall(writingBehind: Bool) async throws {
        let data = try await Self.makeData()
        let server = try FaultServer { .serving(data, for: $0) }
        let bufferSize = 16 * 1024
        let transport = httpTransport(bufferSize: bufferSize, writingBehind: writingBehind)
        let sink = HoldingSink(holdingAfter: 0)
        let task = Task { try await transport.transfer(.forTests(server.url("/f"), idleTimeout: .seconds(1)), into: sink) }
        defer { task.cancel() }
        // Paused: the sink refused its first write, and the server sent more than curl can take
        // without pausing (its buffer, and the write-behind ring of two buffers): until curl
        // pauses, each of its reads finds bytes.
        try await eventually("the sink holding and \(4 * bufferSize) bytes sent", seen: "\(server.bodyBytesSent) bytes sent") {
            sink.isHolding && server.bodyBytesSent >= 4 * bufferSize
        }

        let silent = try FaultServer { .serving(data, for: $0, fault: .stallAfter(0)) }
        let timedOut = await transportError {
            try await transport.transfer(.forTests(silent.url("/f"), idleTimeout: .seconds(1)), into: RecordingSink())
        }
        withExtendedLifetime(silent) {}   // the silent server must outlive its transfer
        #expect(timedOut?.code == .timedOut, "\(String(describing: timedOut))")
        #expect(sink.isHolding)

        sink.release()
        try await task.value
        #expect(sha256Hex(sink.data) == sha256Hex(data))
    }

    @Test func aStallTimesOutAfterTheIdleTimeout() async throws {
        let data = try await Self.makeData()
        let server = try FaultServer { .serving(data, for: $0, fault: .stallAfter(10_000)) }
        let start = ContinuousClock.now
        let sink = RecordingSink()
        let error = await transportError {
            try await HTTPTransport().transfer(.forTests(server.url("/f"), idleTimeout: .seconds(1)), into: sink)
        }
        withExtendedLifetime(server) {}   // the stalling server must outlive the transfer
        // Normally `.timedOut`; on a starved CI machine the loopback connection has been seen to
        // drop first. Either way the stalled transfer ends, retryable, instead of hanging.
        #expect(error?.code == .timedOut || error?.code == .connectionLost, "\(String(describing: error))")
        #expect(error?.isRetryable == true)
        if error?.code == .timedOut {
            #expect(error?.message.contains("nothing received for 1 s") == true, "\(String(describing: error))")
            #expect(sink.data.count == 10_000)
        }
        // A lower bound only: never before the timeout. How late is the machine's (the curl
        // thread looks about every 0.25 s; a loaded machine stretches that); a transfer that
        // never times out hangs into the suite's time limit, which names this test.
        #expect(ContinuousClock.now - start >= .seconds(1))
    }
}
