import Foundation
import Synchronization
import Testing
@testable import Paperboy
import PaperboyTestServers
import PaperboyTesting

@Suite("Resume", .timeLimit(.minutes(3)))
struct ResumeTests {
    let folder = TempFolder()
    var root: URL { folder.file("library") }
    let data = randomData(3 << 20)
    let cut = 1 << 20

    func open(_ transport: any Transport, attempts: Int = 1, boot: String = "boot-1",
              configure: (inout Library.Configuration) -> Void = { _ in }) throws -> Library {
        var configuration = Library.Configuration.forTests(attempts: attempts)
        configuration.bootIdentity = { boot }
        configure(&configuration)
        return try Library.open(at: root, transports: TransportRegistry([transport]), configuration: configuration)
    }

    /// Downloads until the transport drops the connection after `cut` bytes, then closes the library.
    func interrupted(_ transport: InMemoryTransport, sha256: String? = nil) async throws -> (asset: String, partial: URL) {
        let library = try open(transport)
        let asset = try await library.addIssue(name: "i", date: Date())
            .addAsset(AssetRequest(url: URL(string: "mem://example/file.bin")!, sha256: sha256))
        try await asset.download()
        await library.waitUntilIdle()
        guard case .failed = asset.state else {
            Testing.Issue.record("expected a failure, got \(asset.state)")
            return ("", root)
        }
        #expect(asset.totalBytesWritten == Int64(cut))
        await library.close()
        return (asset.identifier, root.appendingPathComponent(".partial/\(asset.identifier)"))
    }

    func resume(_ transport: any Transport, _ id: String, boot: String = "boot-1") async throws -> (RecordingDelegate, Library) {
        let library = try open(transport, boot: boot)
        let asset = try #require(await library.asset(identifier: id))
        let delegate = RecordingDelegate()
        try await asset.download(delegate: delegate)
        await delegate.waitForEnd()
        return (delegate, library)
    }

    func makeTransport() -> InMemoryTransport {
        let transport = InMemoryTransport()
        // Not retryable: an attempt that made progress is retried whatever `attempts` says.
        transport.serve(data, at: "file.bin", script: [.failAfter(cut, TransportError(.connectionLost, "reset by peer", isRetryable: false))])
        return transport
    }

    @Test func resumesAfterReopenFromThePartialFile() async throws {
        let transport = makeTransport()
        let (id, partial) = try await interrupted(transport)
        #expect(try Bytes(Data(contentsOf: partial)) == Bytes(data.prefix(cut)))
        let (delegate, library) = try await resume(transport, id)
        #expect(transport.jobs.last?.offset == Int64(cut))
        #expect(transport.jobs.last?.validator == ResourceValidator("v1", strength: .strong))
        #expect(delegate.events.first == .willResume(url: URL(string: "mem://example/file.bin")!))
        #expect(delegate.events.dropFirst().first == .resumed(total: Int64(cut), expected: Int64(data.count)))
        #expect(delegate.keptFiles == [data])
        await library.close()
    }

    @Test func afterARebootAPartialFileLongerThanRecordedIsCutBack() async throws {
        let transport = makeTransport()
        let (id, partial) = try await interrupted(transport)
        // Bytes that were written but never recorded as durable, then a kernel crash: they may
        // be anything (here, junk a file system could show), and are not trusted.
        let handle = try FileHandle(forWritingTo: partial)
        try handle.seekToEnd()
        try handle.write(contentsOf: Data(repeating: 0xEE, count: 4096))
        try handle.close()
        let (delegate, library) = try await resume(transport, id, boot: "boot-2")
        #expect(transport.jobs.last?.offset == Int64(cut))
        #expect(delegate.keptFiles == [data])
        await library.close()
    }

    @Test func aPartialFileShorterThanRecordedResumesFromWhatIsThere() async throws {
        let transport = makeTransport()
        let (id, partial) = try await interrupted(transport)
        let handle = try FileHandle(forWritingTo: partial)
        try handle.truncate(atOffset: 100_000)
        try handle.close()
        let (delegate, library) = try await resume(transport, id)
        #expect(transport.jobs.last?.offset == 100_000)
        #expect(delegate.keptFiles == [data])
        await library.close()
    }

    @Test func aMissingPartialFileStartsFromZero() async throws {
        let transport = makeTransport()
        let (id, partial) = try await interrupted(transport)
        try FileManager.default.removeItem(at: partial)
        let (delegate, library) = try await resume(transport, id)
        #expect(transport.jobs.last?.offset == 0)
        #expect(delegate.keptFiles == [data])
        await library.close()
    }

    @Test func aChangedSourceRestartsFromZero() async throws {
        let transport = makeTransport()
        let (id, _) = try await interrupted(transport)
        let newer = randomData(2 << 20, seed: 99)
        transport.replace(URL(string: "mem://example/file.bin")!, with: newer, validator: "v2")
        let (delegate, library) = try await resume(transport, id)
        #expect(transport.jobs.last?.offset == Int64(cut))
        #expect(delegate.keptFiles == [newer])
        #expect(!delegate.events.contains { if case .resumed = $0 { return true } else { return false } })
        await library.close()
    }

    @Test func aSourceIgnoringTheRangeIsTakenFromZero() async throws {
        let transport = InMemoryTransport()
        transport.serve(data, at: "file.bin", script: [.failAfter(cut, TransportError(.connectionLost, "reset", isRetryable: false)), .ignoreRange])
        let (id, _) = try await interrupted(transport)
        let (delegate, library) = try await resume(transport, id)
        #expect(delegate.keptFiles == [data])
        await library.close()
    }

    /// A transport that claims to continue at the offset even though the version changed:
    /// the core must refuse to splice and start over.
    struct CarelessTransport: Transport {
        let inner: InMemoryTransport
        let newer: Data
        var schemes: Set<String> { ["mem"] }
        var capabilities: TransportCapabilities { [.resume] }
        func transfer(_ job: TransferJob, into sink: any TransferSink) async throws {
            try sink.begin(TransferResponse(offset: job.offset, expectedLength: Int64(newer.count), validator: ResourceValidator("v2", strength: .strong)))
            try await sink.write(newer[Int(job.offset)...])
        }
    }

    @Test func theCoreRefusesToSpliceTwoVersions() async throws {
        let transport = makeTransport()
        let (id, _) = try await interrupted(transport)
        let newer = randomData(3 << 20, seed: 7)
        let careless = CarelessTransport(inner: transport, newer: newer)
        let (delegate, library) = try await resume(careless, id)
        #expect(delegate.keptFiles == [newer])
        await library.close()
    }

    /// Runs `before` (set once the test's assets exist) ahead of each transfer of `inner`.
    final class HeldTransport: Transport, Sendable {
        let inner: InMemoryTransport
        let before = LockedFunction<@Sendable (TransferJob) async throws -> Void>()
        init(_ inner: InMemoryTransport) { self.inner = inner }
        var schemes: Set<String> { inner.schemes }
        var capabilities: TransportCapabilities { inner.capabilities }
        func transfer(_ job: TransferJob, into sink: any TransferSink) async throws {
            if let before = before.function { try await before(job) }
            try await inner.transfer(job, into: sink)
        }
    }

    /// A resume that splices two versions (the source kept its validator) fails its SHA-256 and
    /// is fetched again from 0 in the same attempt: that fetch is one more transfer, and stays
    /// within the limits. Another asset (on the same host, or on another with one transfer in
    /// all) waits until the first is verified.
    @Test(arguments: [(perHost: 1, total: 4, host: "example"), (perHost: 4, total: 1, host: "elsewhere")])
    func aSplicedResumeFetchedAgainFromZeroStaysWithinTheLimits(perHost: Int, total: Int, host: String) async throws {
        let transport = makeTransport()
        let url = URL(string: "mem://example/file.bin")!
        let newer = randomData(data.count, seed: 31)
        let (id, _) = try await interrupted(transport, sha256: sha256Hex(newer))
        transport.replace(url, with: newer, validator: "v1")
        // The other asset stalls once started, so that it is still running if a fetch overlaps it.
        let otherURL = transport.serve(randomData(64 << 10, seed: 32), at: "other.bin", host: host, script: [.stallAfter(1024)])

        let held = HeldTransport(transport)
        let library = try open(held) {
            $0.maxTransfersPerHost = perHost
            $0.maxConcurrentTransfers = total
        }
        let asset = try #require(await library.asset(identifier: id))
        let other = try await library.addIssue(name: "j", date: Date()).addAsset(AssetRequest(url: otherURL))
        // Each fetch of the spliced asset waits until the other asset has been asked for, and,
        // if it was started meanwhile, until its transfer runs: an overlap is then certain.
        held.before.set { job in
            guard job.url == url else { return }
            try await eventually("the other asset queued or transferring", seen: "\(other.state)") {
                let state = other.state
                return state != .idle && (state != .downloading || transport.jobs.contains { $0.url == otherURL })
            }
        }
        let delegate = RecordingDelegate()
        try await asset.download(delegate: delegate)
        try await other.download()
        await delegate.waitForEnd()
        try await eventually("the other asset's transfer", seen: "\(transport.jobs.map(\.url))") {
            transport.jobs.contains { $0.url == otherURL }
        }

        #expect(delegate.keptFiles.map(sha256Hex) == [sha256Hex(newer)])
        #expect(transport.jobs.filter { $0.url == url }.map(\.offset) == [0, Int64(cut), 0])
        #expect(transport.maxConcurrent(host: "example") == 1, "transfers at once against example")
        #expect(transport.maxConcurrentTotal == 1, "transfers at once")
        await library.close()
    }

    @Test func pauseKeepsBytesAndDownloadContinues() async throws {
        let transport = InMemoryTransport()
        let url = transport.serve(data, at: "p.bin", script: [.stallAfter(cut)])
        let library = try open(transport)
        let asset = try await library.addIssue(name: "i", date: Date()).addAsset(AssetRequest(url: url))
        let delegate = RecordingDelegate()
        try await asset.download(delegate: delegate)
        try await eventually("stall") { asset.totalBytesWritten == Int64(cut) }
        try await asset.pause()
        try await eventually("paused") { asset.state == .waiting(.pausedByApp) }
        #expect(asset.totalBytesWritten == Int64(cut))
        try await asset.download()
        await delegate.waitForEnd()
        #expect(delegate.events.contains(.resumed(total: Int64(cut), expected: Int64(data.count))))
        #expect(delegate.keptFiles == [data])
        #expect(transport.jobs.map(\.offset) == [0, Int64(cut)])
        await library.close()
    }

    /// A delegate is an object: `download(delegate:)` with the one already attached (a pause keeps
    /// it) is one attachment, so every call comes once. An `events()` stream attached meanwhile
    /// gets the same transfer.
    @Test func resumingWithTheSameDelegateDoesNotDoubleItsCalls() async throws {
        let transport = InMemoryTransport()
        let url = transport.serve(data, at: "same.bin", script: [.stallAfter(cut)])
        let library = try open(transport)
        let asset = try await library.addIssue(name: "i", date: Date()).addAsset(AssetRequest(url: url))
        let delegate = RecordingDelegate()
        try await asset.download(delegate: delegate)
        try await asset.download(delegate: delegate)
        try await eventually("stall") { asset.totalBytesWritten == Int64(cut) }
        try await asset.pause()
        try await eventually("paused") { asset.state == .waiting(.pausedByApp) }
        let stream = try await asset.events()
        try await asset.download(delegate: delegate)
        await delegate.waitForEnd()
        var streamed: [DownloadEvent] = []
        for await event in stream { streamed.append(event) }

        let events = delegate.events
        let resumes = events.filter { if case .resumed = $0 { true } else { false } }
        #expect(resumes == [.resumed(total: Int64(cut), expected: Int64(data.count))])
        #expect(events.filter { if case .finished = $0 { true } else { false } }.count == 1)
        #expect(delegate.keptFiles == [data])
        let totals = events.compactMap { if case .progress(_, let total, _) = $0 { total } else { nil } }
        #expect(zip(totals, totals.dropFirst()).allSatisfy { $0 < $1 }, "\(totals)")
        // After the resume, the byte counts add up to the rest of the file, once.
        let afterResume = events.drop { if case .resumed = $0 { false } else { true } }
        let resumedBytes = afterResume.compactMap { if case .progress(let bytes, _, _) = $0 { bytes } else { nil } }
        #expect(resumedBytes.reduce(0, +) == Int64(data.count - cut))
        // The stream, a delegate of its own, saw the same resumed transfer to its end.
        #expect(streamed.first.map { if case .resumed(Int64(cut), _) = $0 { true } else { false } } == true, "\(streamed)")
        #expect(streamed.last.map { if case .finished = $0 { true } else { false } } == true, "\(streamed)")
        #expect(transport.jobs.map(\.offset) == [0, Int64(cut)])
        await library.close()
    }

    /// README's relaunch: the library resumes an interrupted transfer when it opens, and the
    /// app's loop over `downloadingAssets` attaches its delegate a moment later. The delegate
    /// still gets `didResumeAt` first, then the rest of the bytes. The loop runs at once, once
    /// the continuing transfer has begun, or once it has written bytes (other launch work).
    @Test func theRelaunchLoopNeverMissesDidResumeAt() async throws {
        let size = 1 << 20, cut = 256 << 10
        let body = randomData(size, seed: 3)
        for round in 0..<15 {
            let transport = InMemoryTransport(chunkSize: 64 << 10, chunkDelay: .milliseconds(1))
            let url = transport.serve(body, at: "r\(round).bin", script: [.stallAfter(cut)])
            let root = folder.file("relaunch-\(round)")
            var configuration = Library.Configuration.forTests()
            configuration.bootIdentity = { "boot-1" }
            let first = try Library.open(at: root, transports: TransportRegistry([transport]), configuration: configuration)
            let asset = try await first.addIssue(name: "i", date: Date()).addAsset(AssetRequest(url: url))
            try await asset.download()
            try await eventually("stall") { asset.totalBytesWritten == Int64(cut) }
            await first.close()

            let library = try Library.open(at: root, transports: TransportRegistry([transport]), configuration: configuration)
            let resumed = try #require(await library.asset(identifier: asset.identifier))
            switch round % 3 {
            case 1: try await eventually("round \(round): the transfer begun again") { transport.jobs.count == 2 }
            case 2: try await eventually("round \(round): bytes past the cut") { resumed.totalBytesWritten > Int64(cut) }
            default: break
            }
            let delegate = RecordingDelegate()
            for asset in library.downloadingAssets { try await asset.download(delegate: delegate) }
            await delegate.waitForEnd()
            let events = delegate.events
            #expect(events.first == .resumed(total: Int64(cut), expected: Int64(size)), "round \(round): \(events.prefix(3))")
            #expect(events.filter { if case .resumed = $0 { true } else { false } }.count == 1, "round \(round)")
            let bytes = events.compactMap { if case .progress(let bytes, _, _) = $0 { bytes } else { nil } }
            #expect(bytes.isEmpty || bytes.reduce(0, +) == Int64(size - cut), "round \(round): \(bytes)")
            #expect(delegate.keptFiles == [body], "round \(round)")
            await library.close()
        }
    }

    /// A 3 MiB transfer under way, held after its first 64 KiB (the library's sink pushes back
    /// until the test releases the hold): it cannot end before the test acts, however the
    /// machine is paced.
    func transferUnderWay(_ name: String) async throws -> (InMemoryTransport, HoldingTransport, Library, AssetDownload, RecordingDelegate) {
        let transport = InMemoryTransport(chunkSize: 64 * 1024)
        let held = HoldingTransport(base: transport, holdingAfter: 64 * 1024)
        let url = transport.serve(data, at: name)
        let library = try open(held)
        let asset = try await library.addIssue(name: "i", date: Date()).addAsset(AssetRequest(url: url))
        let delegate = RecordingDelegate()
        try await asset.download(delegate: delegate)
        try await eventually("the transfer held after 64 KiB", seen: "\(held.bytesTaken) bytes, state \(asset.state)") { held.isHolding }
        return (transport, held, library, asset, delegate)
    }

    @Test func downloadRightAfterPauseIsNotLost() async throws {
        let (_, held, library, asset, delegate) = try await transferUnderWay("p2.bin")
        try await asset.pause()
        try await asset.download()      // before the paused transfer has even stopped
        held.release()
        await delegate.waitForEnd()
        #expect(delegate.keptFiles == [data])
        await library.close()
    }

    @Test func downloadRightAfterCancelStartsAfreshForTheNewDelegate() async throws {
        let (transport, held, library, asset, cancelled) = try await transferUnderWay("c2.bin")
        try await asset.cancel()
        let fresh = RecordingDelegate()
        try await asset.download(delegate: fresh)      // before the cancelled transfer has even stopped
        held.release()
        await cancelled.waitForEnd()
        await fresh.waitForEnd()
        #expect(cancelled.events.contains { if case .failed(let code, _) = $0 { code == "cancelled" } else { false } })
        #expect(cancelled.keptFiles.isEmpty)
        #expect(fresh.keptFiles == [data])
        #expect(!fresh.events.contains { if case .failed = $0 { true } else { false } })
        #expect(transport.jobs.last?.offset == 0)
        await library.close()
    }

    /// The last command wins even while the transfer is still stopping: a cancel after a
    /// download asked for during a pause or a cancel is a cancel, for every delegate.
    @Test(arguments: ["pause", "cancel"])
    func aCancelAfterADownloadAskedForWhileStoppingIsFinal(first: String) async throws {
        let (transport, held, library, asset, before) = try await transferUnderWay("c3-\(first).bin")
        // The scheduler's own commands, one right after the other: the public ones wait for
        // their commit, long enough for the transfer to have stopped.
        let scheduler = library.scheduler
        if first == "pause" { scheduler.pause(asset.identifier) } else { scheduler.cancel(asset.identifier) }
        let after = RecordingDelegate()
        scheduler.download(asset, delegate: after)
        scheduler.cancel(asset.identifier)
        held.release()
        await before.waitForEnd()
        await after.waitForEnd()
        await library.waitUntilIdle()
        for delegate in [before, after] {
            #expect(delegate.events.contains { if case .failed(let code, _) = $0 { code == "cancelled" } else { false } })
            #expect(delegate.keptFiles.isEmpty)
        }
        #expect(asset.state == .cancelled)
        #expect(transport.jobs.count == 1)
        await library.close()
    }

    @Test func aSmallBodyIsGatheredAndItsBytesSurviveAFailure() async throws {
        let small = randomData(200_000, seed: 7)
        let transport = InMemoryTransport(chunkSize: 16 * 1024)
        let error = TransportError(.connectionLost, "reset", isRetryable: true)
        let url = transport.serve(small, at: "small.bin", script: [.stallAfter(50_000), .failAfter(100_000, error)])
        let library = try open(transport, attempts: 3)
        let asset = try await library.addIssue(name: "i", date: Date()).addAsset(AssetRequest(url: url))
        let delegate = RecordingDelegate()
        try await asset.download(delegate: delegate)
        try await eventually("50,000 bytes") { asset.totalBytesWritten >= 50_000 }
        // Gathered in memory while the transfer runs: nothing in the partial file yet.
        let partial = library.scheduler.layout.partialURL(asset: asset.identifier)
        #expect(((try? FileManager.default.attributesOfItem(atPath: partial.path))?[.size] as? NSNumber)?.intValue == 0)
        try await asset.pause()
        try await eventually("paused") { asset.state == .waiting(.pausedByApp) }
        // Pausing wrote them and recorded them: the next attempt continues from there.
        #expect(((try? FileManager.default.attributesOfItem(atPath: partial.path))?[.size] as? NSNumber)?.intValue == 50_000)
        try await asset.download()
        await delegate.waitForEnd()
        #expect(delegate.keptFiles == [small])
        #expect(transport.jobs.map(\.offset) == [0, 50_000, 150_000])  // the failed attempt sent 100,000
        await library.close()
    }

    @Test func cancelRemovesPartialBytes() async throws {
        let transport = InMemoryTransport()
        let url = transport.serve(data, at: "c.bin", script: [.stallAfter(cut)])
        let library = try open(transport)
        let asset = try await library.addIssue(name: "i", date: Date()).addAsset(AssetRequest(url: url))
        let delegate = RecordingDelegate()
        try await asset.download(delegate: delegate)
        try await eventually("stall") { asset.totalBytesWritten == Int64(cut) }
        try await asset.cancel()
        await delegate.waitForEnd()
        #expect(delegate.events.last == .failed(code: "cancelled", message: "download of asset \(asset.identifier) was cancelled"))
        #expect(asset.state == .cancelled)
        #expect(!FileManager.default.fileExists(atPath: root.appendingPathComponent(".partial/\(asset.identifier)").path))
        await library.close()
    }

    /// An asset interrupted after `cut` bytes of `file.bin`, in a library opened again, and the
    /// URL of the same bytes at `fresh.bin`, for a delegate to refresh the request to.
    func reopenedWithAFreshCopy() async throws -> (InMemoryTransport, fresh: URL, Library, AssetDownload) {
        let transport = makeTransport()
        let fresh = transport.serve(data, at: "fresh.bin")
        let (id, _) = try await interrupted(transport)
        let library = try open(transport)
        return (transport, fresh, library, try #require(await library.asset(identifier: id)))
    }

    @Test func willResumeMayRefreshTheURLAndKeepTheBytes() async throws {
        let (transport, fresh, library, asset) = try await reopenedWithAFreshCopy()
        let delegate = RecordingDelegate(refresh: { request in
            var request = request
            request.url = fresh
            return request
        })
        try await asset.download(delegate: delegate)
        await delegate.waitForEnd()
        #expect(delegate.events.first == .willResume(url: URL(string: "mem://example/file.bin")!))
        #expect(transport.jobs.last?.url == fresh)
        #expect(transport.jobs.last?.offset == Int64(cut))
        #expect(delegate.keptFiles == [data])
        #expect(asset.request?.url == fresh)
        await library.close()
    }

    /// While the asset is still in memory (its delegate holds the finished file), its request is
    /// already the refreshed one: the live view, not only the row, took it.
    @Test func aRefreshedRequestIsTheAssetsRequestWhileItIsStillInMemory() async throws {
        let (_, fresh, library, asset) = try await reopenedWithAFreshCopy()
        let delegate = RequestAtFinish(fresh: fresh)
        try await asset.download(delegate: delegate)
        #expect(try await asset.waitUntilFinished() == .delivered)
        #expect(delegate.seen.withLock { $0 } == fresh)
        await library.close()
    }
}

/// Refreshes a resumed request to `fresh`, and reads the asset's request when handed the file.
private final class RequestAtFinish: AssetDownloadDelegate {
    let fresh: URL
    let seen = Mutex<URL?>(nil)
    init(fresh: URL) { self.fresh = fresh }

    func download(_ asset: AssetDownload, willResumeWith request: AssetRequest) async -> AssetRequest {
        var request = request
        request.url = fresh
        return request
    }

    func download(_ asset: AssetDownload, didFinishDownloadingTo destinationURL: URL) async throws {
        let url = asset.request?.url
        seen.withLock { $0 = url }
    }
}
