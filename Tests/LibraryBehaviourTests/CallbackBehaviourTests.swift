import Foundation
import Paperboy
import PaperboyTestServers
import PaperboyTesting
import Testing

/// The delegate's contract (AssetDownloadDelegate's "Ordering"): the trio in order, progress
/// coalesced on the library's clock with one final call, `didResumeAt` before the progress of a
/// continued transfer, exactly one of finished or failed; and the same as a sequence.
@Suite("Library behaviour: callbacks", .timeLimit(.minutes(3)))
struct CallbackBehaviourTests {
    @Test(arguments: Backends.all)
    func theTrioArrivesInOrderWithOneFinalProgressAndOneFinish(backend: any BackendFactory) async throws {
        let home = BehaviourHome(backend)
        let data = try await payload(1_000_000)
        try await home.with { library in
            let asset = try await library.addIssue(name: "i", date: Date()).addAsset(AssetRequest(url: home.memory.serve(data, at: "a.pdf")))
            let delegate = RecordingDelegate()
            try await asset.download(delegate: delegate)
            #expect(try await asset.waitUntilFinished() == .delivered)
            let events = delegate.events
            guard case .finished(let path, let existed)? = events.last else {
                Testing.Issue.record("the last call is \(String(describing: events.last)): \(events)")
                return
            }
            #expect(existed && path.hasSuffix(".pdf"), "\(path)")
            #expect(delegate.endings == 1, "\(events)")
            #expect(delegate.progressTotals.last == Int64(data.count), "one final progress with the whole size: \(events)")
            #expect(zip(delegate.progressTotals, delegate.progressTotals.dropFirst()).allSatisfy { $0 < $1 }, "\(events)")
            #expect(!events.contains { if case .resumed = $0 { true } else { false } }, "a transfer from byte 0 does not resume")
            #expect(delegate.keptFiles == [data])
            #expect(!FileManager.default.fileExists(atPath: path), "the temporary file lives only during the call")
        }
    }

    /// With the library's clock standing still, 16 chunks make one progress call: the final one.
    @Test(arguments: Backends.all)
    func progressIsCoalescedOnTheLibrarysClock(backend: any BackendFactory) async throws {
        let home = BehaviourHome(backend, chunkSize: 16 * 1024)
        let data = try await payload(16 * 16 * 1024)
        try await home.with(clock: TestClock()) { library in
            let asset = try await library.addIssue(name: "i", date: Date()).addAsset(AssetRequest(url: home.memory.serve(data, at: "a.bin")))
            let delegate = RecordingDelegate()
            try await asset.download(delegate: delegate)
            #expect(try await asset.waitUntilFinished() == .delivered)
            let size = Int64(data.count)
            #expect(delegate.events.filter { if case .progress = $0 { true } else { false } } == [.progress(bytesWritten: size, total: size, expected: size)])
        }
    }

    /// Each chunk comes one progress interval (20 ms of the test clock) after the previous one:
    /// each is told, none is lost on the way to the delegate (through a daemon, see
    /// ``RecordingDelegate/expectProgress(_:mergeable:sourceLocation:)``).
    @Test(arguments: Backends.all)
    func progressComesOncePerIntervalAsTheClockMoves(backend: any BackendFactory) async throws {
        let clock = TestClock()
        let chunk = 32 * 1024
        let home = BehaviourHome(backend, chunkSize: chunk, chunkDelay: .milliseconds(20), clock: clock)
        let data = try await payload(6 * chunk)
        try await home.with(clock: clock) { library in
            let asset = try await library.addIssue(name: "i", date: Date()).addAsset(AssetRequest(url: home.memory.serve(data, at: "a.bin")))
            let delegate = RecordingDelegate()
            try await asset.download(delegate: delegate)
            try await clock.passChunks(6)
            #expect(try await asset.waitUntilFinished() == .delivered)
            delegate.expectProgress((1...6).map { Int64($0 * chunk) }, mergeable: backend is DaemonFactory)
        }
    }

    @Test(arguments: Backends.all)
    func aFailedDownloadGetsOneDidFailAndNothingElse(backend: any BackendFactory) async throws {
        let home = BehaviourHome(backend)
        try await home.with { library in
            let asset = try await library.addIssue(name: "i", date: Date()).addAsset(AssetRequest(url: URL(string: "mem://example/missing.bin")!))
            let delegate = RecordingDelegate()
            try await asset.download(delegate: delegate)
            guard case .failed(let error) = try await asset.waitUntilFinished() else {
                Testing.Issue.record("not a failure")
                return
            }
            await delegate.waitForEnd()
            #expect(delegate.failures == [error], "\(delegate.events)")
            #expect(delegate.events.count == 1, "\(delegate.events)")
        }
    }

    /// A paused transfer continued: `didResumeAt` once, with the bytes kept, before any progress
    /// past them.
    @Test(arguments: Backends.all)
    func didResumeAtComesOnceBeforeTheProgressOfAContinuedTransfer(backend: any BackendFactory) async throws {
        let home = BehaviourHome(backend)
        let data = try await payload(400_000)
        let cut = 128 * 1024
        try await home.with { library in
            let url = home.memory.serve(data, at: "r.bin", script: [.stallAfter(cut)])
            let asset = try await library.addIssue(name: "i", date: Date()).addAsset(AssetRequest(url: url))
            let delegate = RecordingDelegate()
            try await asset.download(delegate: delegate)
            try await asset.waitForStatus("stalled at \(cut) bytes") { $0.totalBytesWritten == Int64(cut) }
            try await asset.pause()
            try await asset.waitForStatus("paused") { $0.state == .waiting(.pausedByApp) }
            let before = delegate.events.count
            try await asset.resume()
            #expect(try await asset.waitUntilFinished() == .delivered)
            let after = Array(delegate.events.dropFirst(before))
            let resumes = after.filter { if case .resumed = $0 { true } else { false } }
            #expect(resumes == [.resumed(total: Int64(cut), expected: Int64(data.count))], "\(after)")
            let firstProgress = after.firstIndex { if case .progress = $0 { true } else { false } }
            #expect(after.firstIndex(of: .resumed(total: Int64(cut), expected: Int64(data.count))) ?? .max < firstProgress ?? .max, "\(after)")
            #expect(delegate.endings == 1 && delegate.keptFiles == [data])
        }
    }

    /// `events()`: the file of `.finished` is there until the next element is asked for; the
    /// sequence ends after it.
    @Test(arguments: Backends.all)
    func theEventSequenceHoldsTheFileUntilTheNextElementThenEnds(backend: any BackendFactory) async throws {
        let home = BehaviourHome(backend)
        let data = try await payload(200_000)
        try await home.with { library in
            let asset = try await library.addIssue(name: "i", date: Date()).addAsset(AssetRequest(url: home.memory.serve(data, at: "s.bin")))
            var iterator = try await asset.events().makeAsyncIterator()
            var seen: [DownloadEvent] = []
            while let event = await iterator.next() {
                seen.append(event)
                if case .finished(let url) = event {
                    #expect(FileManager.default.contents(atPath: url.path) == data, "the file is there while the element is held")
                    #expect(try await asset.status().state == .finished, "not delivered while the element is held")
                }
            }
            guard case .finished? = seen.last else {
                Testing.Issue.record("the sequence ended with \(String(describing: seen.last)): \(seen)")
                return
            }
            #expect(try await asset.waitUntilFinished() == .delivered)
        }
    }

    @Test(arguments: Backends.all)
    func theEventSequenceEndsAfterAFailure(backend: any BackendFactory) async throws {
        let home = BehaviourHome(backend)
        try await home.with { library in
            let asset = try await library.addIssue(name: "i", date: Date()).addAsset(AssetRequest(url: URL(string: "mem://example/gone.bin")!))
            var seen: [DownloadEvent] = []
            for await event in try await asset.events() { seen.append(event) }
            guard case .failed(let error)? = seen.last, seen.count == 1 else {
                Testing.Issue.record("expected one failure: \(seen)")
                return
            }
            #expect(error.reason == .notFound && error.transportCode == .notFound, "\(error)")
        }
    }

    /// An object attached twice is one attachment; another delegate gets its own calls.
    @Test(arguments: Backends.all)
    func aDelegateAttachedTwiceGetsEachCallOnce(backend: any BackendFactory) async throws {
        let clock = TestClock()
        let home = BehaviourHome(backend, chunkSize: 64 * 1024, chunkDelay: .milliseconds(20), clock: clock)
        let data = try await payload(2 * 64 * 1024)
        try await home.with(clock: clock) { library in
            let asset = try await library.addIssue(name: "i", date: Date()).addAsset(AssetRequest(url: home.memory.serve(data, at: "t.bin")))
            let (first, second) = (RecordingDelegate(), RecordingDelegate())
            try await asset.download(delegate: first)
            try await asset.download(delegate: first)
            try await asset.download(delegate: second)
            try await clock.passChunks(2)
            #expect(try await asset.waitUntilFinished() == .delivered)
            await second.waitForEnd()
            for delegate in [first, second] {
                #expect(delegate.endings == 1, "\(delegate.events)")
                #expect(delegate.keptFiles == [data])
                delegate.expectProgress([64 * 1024, 128 * 1024], mergeable: backend is DaemonFactory)
            }
            #expect(home.memory.jobs.count == 1, "one transfer for three attachments")
        }
    }
}
