import Foundation
import Paperboy
import PaperboyTestServers
import PaperboyTesting
import Testing

/// The test servers' `HoldingTransport`: a transfer held at a known point, for tests that act in
/// the middle of one whose sink the library owns.
@Suite("HoldingTransport", .timeLimit(.minutes(2)))
struct HoldingTransportTests {
    let data = randomData(256 << 10, seed: 5)

    /// An async-writing transport (the in-memory one), held after 64 KiB in 16 KiB chunks.
    func heldTransfer(into sink: RecordingSink) -> (HoldingTransport, Task<Void, any Error>) {
        let base = InMemoryTransport(chunkSize: 16 << 10)
        let url = base.serve(data, at: "file.bin")
        let held = HoldingTransport(base: base, holdingAfter: 64 << 10)
        return (held, Task { try await held.transfer(.forTests(url), into: sink) })
    }

    @Test func anAsyncWriteIsHeldAtTheLimitUntilReleased() async throws {
        let sink = RecordingSink()
        let (held, task) = heldTransfer(into: sink)
        try await eventually("the transfer held", seen: "\(held.bytesTaken) bytes") { held.isHolding }
        #expect(held.bytesTaken == 64 << 10)
        #expect(Bytes(sink.data) == Bytes(data.prefix(64 << 10)))
        held.release()
        try await task.value
        #expect(!held.isHolding)
        #expect(Bytes(sink.data) == Bytes(data))
    }

    @Test func aHeldAsyncWriteEndsWithItsTasksCancellation() async throws {
        let sink = RecordingSink()
        let (held, task) = heldTransfer(into: sink)
        try await eventually("the transfer held", seen: "\(held.bytesTaken) bytes") { held.isHolding }
        task.cancel()
        await #expect(throws: CancellationError.self) { try await task.value }
        #expect(sink.data.count == 64 << 10)
    }

    /// A callback-style transport: the hold's refusals wait for `release()`, the library sink's
    /// own (its limiter's) for that sink's `whenWritable`, which answers them in 5 ms and throws
    /// on a write while it pushes back.
    @Test func theLibrarySinksPushBackIsItsOwnAndTheHoldsIsTheTests() async throws {
        let data = randomData(1_000_000, seed: 6)
        let held = HoldingTransport(base: BandwidthTests.CallbackStyleTransport(data: data), holdingAfter: 250_000)
        let sink = PushbackSink(every: 2)
        let task = Task { try await held.transfer(.forTests(URL(string: "cb://host/x")!), into: sink) }
        try await eventually("the transfer held", seen: "\(held.bytesTaken) bytes") { held.isHolding }
        #expect(held.bytesTaken == 300_000)   // 100,000-byte chunks
        held.release()
        try await task.value
        #expect(sink.refusals > 0)
        #expect(Bytes(sink.data) == Bytes(data))
    }
}
