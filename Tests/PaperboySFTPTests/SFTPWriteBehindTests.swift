import Foundation
@testable import PaperboySFTP
import PaperboyTestServers
import PaperboyTesting
import Synchronization
import Testing

/// The write-behind queue of SFTP downloads, on its own: what a stop does with the chunks it holds.
@Suite("SFTP write-behind", .timeLimit(.minutes(2)))
struct SFTPWriteBehindTests {
    /// A target whose first write waits for the test's gate, recording every byte.
    final class Target: Sendable {
        let gate = GatedSink()
        var target: SFTPWriteBehind.Target {
            SFTPWriteBehind.Target(tryWrite: { [gate] in gate.tryWrite($0) }, whenWritable: { $0() })
        }
    }

    /// Three chunks of four bytes (1111, 2222, 3333) queued while the first is being written,
    /// then `close(flushing:)`, then the write in progress ends.
    func closeWhileWriting(flushing: Bool) async throws -> [UInt8] {
        let writer = SFTPWriteBehind(bufferSize: 4, bufferCount: 3)
        let target = Target()
        defer { target.gate.open() }
        let index = writer.addTarget(target.target)
        for value in UInt8(1)...3 {
            let free = writer.takeBuffer(orWhenFree: {})
            let buffer = try #require(free)
            buffer.pointer.initializeMemory(as: UInt8.self, repeating: value, count: 4)
            writer.submit(buffer, count: 4, to: index)
        }
        try await eventually("the first chunk's write", seen: "\(target.gate.calls) writes") { target.gate.calls == 1 }
        let closing = Task { await writer.close(flushing: flushing) }
        try await eventually("close() taking the queue") { writer.isClosed }
        target.gate.open()
        await closing.value
        return Array(target.gate.data)
    }

    @Test func aStopStillWritesTheQueuedChunksInOrder() async throws {
        #expect(try await closeWhileWriting(flushing: true) == [1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3])
    }

    @Test func aCloseWithoutFlushingDropsTheQueuedChunks() async throws {
        #expect(try await closeWhileWriting(flushing: false) == [1, 1, 1, 1])
    }
}
