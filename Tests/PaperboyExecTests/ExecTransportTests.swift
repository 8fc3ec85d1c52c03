import Foundation
import Paperboy
import PaperboyExec
import PaperboyTesting
import Testing

@Suite("ExecTransport")
struct ExecTransportTests {
    let folder = TempFolder()
    let url = URL(string: "fake://host/file.bin")!

    func job(idle: Duration = .seconds(10)) -> TransferJob {
        TransferJob(url: url, connectTimeout: .seconds(10), idleTimeout: idle)
    }

    @Test func aCorrectHelperServesSeveralTransfersFromOneProcess() async throws {
        let transport = folder.fakeTransport("serve")
        // 0...255 repeated, what the fake helper serves (filled in place: a debug build's
        // `flatMap` over a million bytes held a thread of the test pool for long).
        var data = Data(count: 4096 * 256)
        data.withUnsafeMutableBytes { bytes in
            for index in bytes.indices { bytes[index] = UInt8(truncatingIfNeeded: index) }
        }
        var pids: Set<Int32> = []
        for _ in 0..<3 {
            let sink = RecordingSink()
            try await transport.transfer(job(), into: sink)
            #expect(Bytes(sink.data) == Bytes(data))
            #expect(sink.response == TransferResponse(offset: 0, expectedLength: Int64(data.count), validator: ResourceValidator("v1", strength: .strong)))
            pids.formUnion(transport.helperProcessIDs)
        }
        #expect(pids.count == 1)
        let pid = try #require(pids.first)
        transport.retireIdleHelpers()
        try await eventually("the retired helper to exit on end of input and be reaped", timeout: .seconds(20)) { processIsGone(pid) }
    }

    @Test func aCrashNamesTheHelperQuotesItsStderrAndIsRetryable() async throws {
        let transport = folder.fakeTransport("crash")
        let sink = RecordingSink()
        let error = try #require(await failure(of: transport, job(), into: sink) as? TransportError)
        #expect(error.code == .connectionLost)
        #expect(error.isRetryable)
        #expect(error.message.contains("transport helper 'fake-helper'"))
        #expect(error.message.contains("exited with status 3"))
        #expect(error.message.contains("disk on fire, giving up"))
        #expect(sink.data.count == 3 * 65536)
        try await eventually("the crashed helper to be reaped", timeout: .seconds(20)) { transport.helperProcessIDs.isEmpty }
    }

    @Test func garbageOnStdoutIsAFatalProtocolError() async throws {
        let transport = folder.fakeTransport("garbage")
        let error = try #require(await failure(of: transport, job(), into: RecordingSink()) as? TransportError)
        #expect(error.code == .protocolError)
        #expect(!error.isRetryable)
        #expect(error.message.contains("not a protocol frame"))
        #expect(error.message.contains("Traceback"))
    }

    @Test func moreBytesThanAnnouncedIsAProtocolError() async throws {
        let transport = folder.fakeTransport("overflow")
        let sink = RecordingSink()
        let error = try #require(await failure(of: transport, job(), into: sink) as? TransportError)
        #expect(error.code == .protocolError)
        #expect(error.message.contains("sent more than the"))
        #expect(sink.data.count <= 1 << 20)
    }

    @Test func anotherProtocolVersionIsRefused() async throws {
        let transport = folder.fakeTransport("version")
        let error = try #require(await failure(of: transport, job(), into: RecordingSink()) as? TransportError)
        #expect(error.code == .protocolError)
        #expect(!error.isRetryable)
        #expect(error.message.contains("speaks protocol version 2; this Paperboy speaks version 1"))
    }

    @Test func aHangingHelperTimesOutAndIsReaped() async throws {
        let transport = folder.fakeTransport("hang")
        let started = ContinuousClock.now
        let error = try #require(await failure(of: transport, job(idle: .milliseconds(500)), into: RecordingSink()) as? TransportError)
        #expect(error.code == .timedOut)
        #expect(error.isRetryable)
        #expect(error.message.contains("sent nothing for"))
        // Generous: starting Python on a loaded machine takes seconds; the idle timeout is 0.5 s.
        #expect(ContinuousClock.now - started < .seconds(20))
        try await eventually("the stopped helper to be reaped", timeout: .seconds(20)) { transport.helperProcessIDs.isEmpty }
    }

    @Test func cancellationStopsAHelperIgnoringSIGTERMWithSIGKILL() async throws {
        let transport = folder.fakeTransport("stubborn")
        let sink = RecordingSink()
        let task = Task { try await transport.transfer(job(), into: sink) }
        try await eventually("the helper to begin", timeout: .seconds(30)) { sink.beginCount == 1 }
        let pids = transport.helperProcessIDs
        #expect(pids.count == 1)
        let cancelled = ContinuousClock.now
        task.cancel()
        let result = await task.result
        #expect(ContinuousClock.now - cancelled < .seconds(2))
        #expect(throws: CancellationError.self) { try result.get() }
        for pid in pids {
            try await eventually("helper \(pid) to be killed and reaped", timeout: .seconds(20)) { processIsGone(pid) }
        }
    }

    @Test func backPressureReachesTheHelperThroughThePipe() async throws {
        let counter = folder.file("count")
        let transport = folder.fakeTransport("count", environment: ["COUNT_FILE": counter.path])
        let sink = RecordingSink(writeDelay: .milliseconds(400))
        let task = Task { try await transport.transfer(job(), into: sink) }
        try await eventually("two chunks to reach the slow sink", timeout: .seconds(20)) { sink.writeCount >= 2 }
        // Time enough for a helper that is not held back to write everything.
        try await Task.sleep(for: .milliseconds(300))
        let written = Int((try? String(contentsOf: counter, encoding: .utf8)) ?? "0") ?? 0
        // The rest waits in at most the pipe (64 KiB), the
        // core's read buffer (64 KiB) and one frame: nowhere near the 16 MiB it has to send.
        #expect(written > 0)
        #expect(written - sink.data.count <= 512 * 1024, "the helper got \(written - sink.data.count) bytes ahead of the sink")
        task.cancel()
        _ = await task.result
    }

    @Test func aMissingExecutableIsAFatalErrorNamingIt() async throws {
        let transport = ExecTransport(scheme: "fake", command: ["paperboy-transport-does-not-exist"])
        let error = try #require(await failure(of: transport, job(), into: RecordingSink()) as? TransportError)
        #expect(error.code == .connectionFailed)
        #expect(!error.isRetryable)
        #expect(error.message.contains("paperboy-transport-does-not-exist was not found on PATH"))
    }

    @Test func discoveryFindsPaperboyTransportSchemeOnThePath() throws {
        folder.script("paperboy-transport-fake", "#!/bin/sh\nexit 0\n")
        let found = try #require(ExecTransport.discover(scheme: "FAKE", searchPath: "/nonexistent:\(folder.url.path)"))
        #expect(found.schemes == ["fake"])
        #expect(found.command == [folder.file("paperboy-transport-fake").path])
        #expect(ExecTransport.discover(scheme: "other", searchPath: folder.url.path) == nil)
    }

    @Test func framesAreTextHeadersWithRawPayloads() {
        let frame = ExecProtocol.frame("DATA", Data([0, 10, 255]))
        #expect(Bytes(frame) == Bytes(Data("DATA 3\n".utf8) + Data([0, 10, 255])))
    }
}
