import Foundation
import Paperboy
import PaperboyExec
import PaperboyTesting
import Testing

/// The exec transport against real helper processes, its timeouts on a ``TestClock``: each test
/// waits for the transport to start a timer, moves time past it, and sees the decision.
@Suite("ExecTransport", .timeLimit(.minutes(3)))
struct ExecTransportTests {
    let folder = TempFolder()
    let clock = TestClock()
    let url = URL(string: "fake://host/file.bin")!

    func job(idle: Duration = .seconds(10)) -> TransferJob {
        TransferJob(url: url, connectTimeout: .seconds(10), idleTimeout: idle)
    }

    /// A helper sends one stream: it may fetch one range, never split into segments.
    @Test func aHelperNeverDeclaresSegments() {
        let transport = ExecTransport(scheme: "fake", command: ["/bin/false"], capabilities: [.resume, .ranges, .segments])
        #expect(transport.capabilities == [.resume, .ranges])
    }

    /// Registered with `.ranges`, but the helper's `HELLO` does not list `ranges`: a range is
    /// never asked of it (it would send the whole file), the transfer fails saying why.
    @Test func aRangeIsNotAskedOfAHelperWhoseHelloDoesNotListRanges() async throws {
        let helper = folder.fakeTransport("serve", clock: clock)
        let transport = ExecTransport(scheme: "fake", command: helper.command, capabilities: [.resume, .ranges],
                                      terminationGrace: .milliseconds(300), clock: clock)
        var ranged = job()
        ranged.rangeEnd = 100
        let sink = RecordingSink()
        let error = try #require(await failure(of: transport, ranged, into: sink) as? TransportError)
        #expect(error.code == .protocolError && !error.isRetryable, "\(error)")
        #expect(error.message.contains("does not list the 'ranges' capability"), "\(error)")
        #expect(sink.response == nil && sink.data.isEmpty)
        transport.retireIdleHelpers()
    }

    @Test func aCorrectHelperServesSeveralTransfersFromOneProcess() async throws {
        let transport = folder.fakeTransport("serve", clock: clock)
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
        // Without moving the clock: it exits on end of input, before any signal is due.
        try await eventually("the retired helper to exit on end of input and be reaped",
                             seen: "pid \(pid) running, sleeps due in \(clock.pendingSleeps)") { processIsGone(pid) }
    }

    @Test func anIdleHelperIsRetiredWhenItsKeepAlivePasses() async throws {
        let transport = folder.fakeTransport("serve", clock: clock)
        try await transport.transfer(job(), into: RecordingSink())
        let pid = try #require(transport.helperProcessIDs.first)
        // The only timer left is the kept helper's retirement, 30 s after the transfer ended.
        try await eventually("the idle helper's retirement to be timed", seen: "\(clock.pendingSleeps)") {
            clock.pendingSleeps == [.seconds(30)]
        }
        clock.advance(by: .seconds(30) - .milliseconds(1))
        #expect(transport.helperProcessIDs == [pid], "retired before its keep-alive passed")
        clock.advance(by: .milliseconds(1))
        try await eventually("the helper to get end of input, exit and be reaped", seen: "\(transport.helperProcessIDs)") {
            processIsGone(pid)
        }
        #expect(transport.helperProcessIDs.isEmpty)
    }

    @Test func aCrashNamesTheHelperQuotesItsStderrAndIsRetryable() async throws {
        let transport = folder.fakeTransport("crash", clock: clock)
        let sink = RecordingSink()
        // The clock stands still: the exit status and the last words are awaited, not timed out.
        let error = try #require(await failure(of: transport, job(), into: sink) as? TransportError)
        #expect(error.code == .connectionLost)
        #expect(error.isRetryable)
        #expect(error.message.contains("transport helper 'fake-helper'"))
        #expect(error.message.contains("exited with status 3"), "\(error.message)")
        #expect(error.message.contains("disk on fire, giving up"), "\(error.message)")
        #expect(sink.data.count == 3 * 65536)
        try await eventually("the crashed helper to be reaped", seen: "\(transport.helperProcessIDs)") { transport.helperProcessIDs.isEmpty }
    }

    @Test func garbageOnStdoutIsAFatalProtocolError() async throws {
        let transport = folder.fakeTransport("garbage", clock: clock)
        let error = try #require(await failure(of: transport, job(), into: RecordingSink()) as? TransportError)
        #expect(error.code == .protocolError)
        #expect(!error.isRetryable)
        #expect(error.message.contains("not a protocol frame"))
        #expect(error.message.contains("Traceback"))
    }

    @Test func moreBytesThanAnnouncedIsAProtocolError() async throws {
        let transport = folder.fakeTransport("overflow", clock: clock)
        let sink = RecordingSink()
        let error = try #require(await failure(of: transport, job(), into: sink) as? TransportError)
        #expect(error.code == .protocolError)
        #expect(error.message.contains("sent more than the"))
        #expect(sink.data.count <= 1 << 20)
    }

    @Test func anotherProtocolVersionIsRefused() async throws {
        let transport = folder.fakeTransport("version", clock: clock)
        let error = try #require(await failure(of: transport, job(), into: RecordingSink()) as? TransportError)
        #expect(error.code == .protocolError)
        #expect(!error.isRetryable)
        #expect(error.message.contains("speaks protocol version 2; this Paperboy speaks version 1"))
    }

    @Test func aHangingHelperTimesOutExactlyAtTheIdleTimeoutAndIsReaped() async throws {
        let transport = folder.fakeTransport("hang", clock: clock)
        let sink = RecordingSink()
        let transfer = Task { try await transport.transfer(job(idle: .milliseconds(500)), into: sink) }
        // After BEGIN the helper sends nothing: the wait for DATA is the one timer.
        try await eventually("the helper to begin and the wait for DATA to be timed",
                             seen: "begin \(sink.beginCount), sleeps due in \(clock.pendingSleeps)") {
            sink.beginCount == 1 && clock.pendingSleeps == [.milliseconds(500)]
        }
        clock.advance(by: .milliseconds(499))
        #expect(clock.pendingSleeps == [.milliseconds(1)], "the idle timeout fired early")
        clock.advance(by: .milliseconds(1))
        let error = try #require(await transfer.result.failure as? TransportError)
        #expect(error.code == .timedOut)
        #expect(error.isRetryable)
        #expect(error.message.contains("sent nothing for 0.5 seconds during the transfer, after 0 bytes; it was stopped"), "\(error.message)")
        // SIGTERM at once: it dies of it before SIGKILL is due.
        #expect(error.message.contains("killed by signal 15"), "\(error.message)")
        try await eventually("the stopped helper to be reaped", seen: "\(transport.helperProcessIDs)") { transport.helperProcessIDs.isEmpty }
    }

    @Test func cancellationStopsAHelperIgnoringSIGTERMWithSIGKILLAfterTheGrace() async throws {
        let transport = folder.fakeTransport("stubborn", clock: clock)
        let sink = RecordingSink()
        let task = Task { try await transport.transfer(job(), into: sink) }
        try await eventually("the helper to begin", seen: "begin \(sink.beginCount)") { sink.beginCount == 1 }
        let pid = try #require(transport.helperProcessIDs.first)
        // The clock stands still: the cancellation ends the transfer, not a timeout.
        task.cancel()
        let result = await task.result
        #expect(throws: CancellationError.self) { try result.get() }
        // SIGTERM was sent and ignored; SIGKILL waits for the 300 ms grace.
        try await eventually("SIGKILL to be timed after the grace", seen: "\(clock.pendingSleeps)") {
            clock.pendingSleeps == [.milliseconds(300)]
        }
        #expect(!processIsDeadOrZombie(pid), "helper \(pid) ignores SIGTERM, yet it is gone before SIGKILL")
        clock.advance(by: .milliseconds(300))
        try await eventually("helper \(pid) to be killed and reaped", seen: "\(transport.helperProcessIDs)") { processIsGone(pid) }
    }

    @Test func backPressureReachesTheHelperThroughThePipe() async throws {
        let counter = folder.file("count")
        let transport = folder.fakeTransport("count", environment: ["COUNT_FILE": counter.path], clock: clock)
        let sink = GatedSink()
        let task = Task { try await transport.transfer(job(), into: sink) }
        // The core is held in the sink's first write: it reads nothing more. The helper writes
        // until the pipe is full and records how far it got (it writes without blocking).
        try await eventually("the core to be held in the sink's first write", seen: "\(sink.bytesTaken) bytes taken") { sink.isHolding }
        try await eventually("the helper to find the pipe full", seen: "no \(counter.lastPathComponent) file") {
            FileManager.default.fileExists(atPath: counter.path)
        }
        let handed = try #require(Int(String(contentsOf: counter, encoding: .utf8)))
        // Between the sink and the helper: the pipe (64 KiB), the core's read buffer (64 KiB) and
        // one frame, nowhere near the 4 MiB it has to send.
        #expect(handed > 0)
        #expect(handed - sink.bytesTaken <= 512 * 1024, "the helper got \(handed - sink.bytesTaken) bytes ahead of the sink")
        sink.open()
        try await task.value
        #expect(sink.data.count == 4 * 1024 * 1024)
        transport.retireIdleHelpers()
    }

    @Test func aMissingExecutableIsAFatalErrorNamingIt() async throws {
        let transport = ExecTransport(scheme: "fake", command: ["paperboy-transport-does-not-exist"], clock: clock)
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

/// The one real-time test of the exec transport: a helper that hangs is really stopped after a
/// short idle timeout on the system clock. Serialized, with bounds for a loaded 2-core machine.
@Suite("ExecTransport in real time", .serialized, .timeLimit(.minutes(2)))
struct ExecTransportRealTimeTests {
    let folder = TempFolder()

    @Test func aHangingHelperIsStoppedAfterARealIdleTimeoutAndReaped() async throws {
        let transport = folder.fakeTransport("hang", clock: SystemClock())
        let job = TransferJob(url: URL(string: "fake://host/file.bin")!, connectTimeout: .seconds(30), idleTimeout: .milliseconds(500))
        let sink = RecordingSink()
        let started = ContinuousClock.now
        let error = try #require(await failure(of: transport, job, into: sink) as? TransportError)
        let took = ContinuousClock.now - started
        #expect(error.code == .timedOut, "\(error)")
        #expect(error.message.contains("sent nothing for 0.5 seconds"), "\(error.message)")
        // Not early: the timeout is real time.
        #expect(took >= .milliseconds(500), "\(took)")
        // Not the helper's own end: it sends its data after sleeping 60 s, so a transfer that got
        // none was stopped while it hung (a bound on the wall clock said this too, and a busy
        // machine that kept the process waiting 28 s in the pool's queue broke it: 47.5 s).
        #expect(sink.data.isEmpty, "\(sink.data.count) bytes arrived: the helper ended its sleep")
        try await eventually("the stopped helper to be reaped", seen: "\(transport.helperProcessIDs)") { transport.helperProcessIDs.isEmpty }
    }
}

extension Result {
    var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
