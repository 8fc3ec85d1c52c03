import Foundation
import Paperboy
import PaperboyTestServers
import PaperboyTesting
import Synchronization
import Testing

/// `waitUntilFinished` and `waitUntilAvailable`, and the library's events: what each says and
/// when it returns. Transfers that must not end yet wait on the test clock (a chunk delay).
@Suite("Library behaviour: waits and events", .timeLimit(.minutes(3)))
struct WaitBehaviourTests {
    /// A home whose in-memory transport waits 20 ms of `clock` before each 64 KiB chunk.
    static func clocked(_ backend: any BackendFactory, _ clock: TestClock) -> BehaviourHome {
        BehaviourHome(backend, chunkSize: 64 * 1024, chunkDelay: .milliseconds(20), clock: clock)
    }

    @Test(arguments: Backends.all)
    func waitUntilFinishedReturnsAtOnceForAnAssetThatEnded(backend: any BackendFactory) async throws {
        let home = BehaviourHome(backend)
        try await home.with { library in
            let issue = try await library.addIssue(name: "i", date: Date())
            let asset = try await issue.addAsset(AssetRequest(url: home.memory.serve(try await payload(50_000), at: "a.bin"), destinationPath: "a.bin"))
            try await asset.download()
            #expect(try await asset.waitUntilFinished() == .delivered)
            #expect(try await asset.waitUntilFinished() == .delivered, "a second wait says the same")
            let failed = try await issue.addAsset(AssetRequest(url: URL(string: "mem://example/none.bin")!))
            try await failed.download()
            let first = try await failed.waitUntilFinished()
            #expect(try await failed.waitUntilFinished() == first)
        }
    }

    /// An idle asset is waited for until it is started and ends.
    @Test(arguments: Backends.all)
    func waitUntilFinishedWaitsForAnIdleAssetToBeStarted(backend: any BackendFactory) async throws {
        let home = BehaviourHome(backend)
        try await home.with { library in
            let asset = try await library.addIssue(name: "i", date: Date())
                .addAsset(AssetRequest(url: home.memory.serve(try await payload(50_000), at: "a.bin"), destinationPath: "a.bin"))
            let returned = Returned()
            let waiting = Task {
                defer { returned.flag.withLock { $0 = true } }
                return try await asset.waitUntilFinished()
            }
            #expect(try await asset.status().state == .idle)
            #expect(!returned.flag.withLock { $0 }, "the wait did not return for an idle asset")
            try await asset.download()
            #expect(try await waiting.value == .delivered)
        }
    }

    /// Cancelling the waiting task ends the wait only: the download goes on.
    @Test(arguments: Backends.all)
    func cancellingTheWaitingTaskLeavesTheDownloadRunning(backend: any BackendFactory) async throws {
        let clock = TestClock()
        let home = Self.clocked(backend, clock)
        let data = try await payload(3 * 64 * 1024)
        try await home.with(clock: clock) { library in
            let asset = try await library.addIssue(name: "i", date: Date()).addAsset(AssetRequest(url: home.memory.serve(data, at: "a.bin")))
            let delegate = RecordingDelegate()
            try await asset.download(delegate: delegate)
            _ = try await clock.waitForSleep(of: .milliseconds(20))
            let waiting = Task { try await asset.waitUntilFinished() }
            waiting.cancel()
            await #expect(throws: CancellationError.self) { try await waiting.value }
            try await clock.passChunks(3)
            #expect(try await asset.waitUntilFinished() == .delivered)
            #expect(delegate.keptFiles == [data])
        }
    }

    /// Closing the library ends the waits with `.closed`.
    @Test(arguments: Backends.all)
    func closingTheLibraryEndsTheWaitsWithClosed(backend: any BackendFactory) async throws {
        let clock = TestClock()
        let home = Self.clocked(backend, clock)
        let session = try await home.open(clock: clock)
        let issue = try await session.library.addIssue(name: "i", date: Date())
        let asset = try await issue.addAsset(AssetRequest(url: home.memory.serve(try await payload(3 * 64 * 1024), at: "a.bin")))
        try await asset.download()
        _ = try await clock.waitForSleep(of: .milliseconds(20))
        let waiting = Task { try await asset.waitUntilFinished() }
        let issueWaiting = Task { try await issue.waitUntilAvailable() }
        await session.close()
        #expect(try await waiting.value == .closed)
        #expect(try await issueWaiting.value == .incomplete([asset: .closed]))
    }

    /// Every asset delivered: `.available`, and by then the issue is new and counted.
    @Test(arguments: Backends.all)
    func waitUntilAvailableSaysAvailableOnceTheIssueIsNew(backend: any BackendFactory) async throws {
        let home = BehaviourHome(backend)
        try await home.with { library in
            let issue = try await library.addIssue(name: "2026-11-21", date: Date())
            let assets = try await issue.addAssets([
                (AssetRequest(url: home.memory.serve(try await payload(80_000, seed: 1), at: "a.pdf"), destinationPath: "a.pdf"), nil),
                (AssetRequest(url: home.memory.serve(try await payload(1_000, seed: 2), at: "c.png"), destinationPath: "c.png", role: .cover), nil),
            ], downloading: true)
            #expect(assets.count == 2)
            #expect(try await issue.waitUntilAvailable() == .available)
            #expect(try await issue.isNew())
            #expect(try await issue.status() == .available)
            #expect(try await library.badgeCount() == 1)
        }
    }

    /// Assets not delivered are named with how each ended; delivered ones are left out.
    @Test(arguments: Backends.all)
    func waitUntilAvailableNamesEachAssetNotDelivered(backend: any BackendFactory) async throws {
        let home = BehaviourHome(backend)
        try await home.with { library in
            let issue = try await library.addIssue(name: "i", date: Date())
            let good = try await issue.addAsset(AssetRequest(url: home.memory.serve(try await payload(10_000), at: "a.bin"), destinationPath: "a.bin"))
            let missing = try await issue.addAsset(AssetRequest(url: URL(string: "mem://example/missing.bin")!, destinationPath: "m.bin"))
            try await good.download()
            try await missing.download()
            guard case .incomplete(let outcomes) = try await issue.waitUntilAvailable() else {
                Testing.Issue.record("complete?")
                return
            }
            #expect(Array(outcomes.keys) == [missing])
            guard case .failed(let error)? = outcomes[missing] else {
                Testing.Issue.record("\(outcomes)")
                return
            }
            #expect(error.reason == .notFound)
            #expect(try await issue.status() == .notDownloaded)
            #expect(try await !issue.isNew())
        }
    }

    @Test(arguments: Backends.all)
    func waitUntilAvailableOfAnIssueWithoutAssetsIsIncompleteAndEmpty(backend: any BackendFactory) async throws {
        let home = BehaviourHome(backend)
        try await home.with { library in
            let issue = try await library.addIssue(name: "empty", date: Date())
            #expect(try await issue.waitUntilAvailable() == .incomplete([:]))
            #expect(try await issue.status() == .notDownloaded)
        }
    }

    /// An asset's states, as the library's events tell them: downloading, then delivered last.
    @Test(arguments: Backends.all)
    func anAssetsStatesAreToldInOrderUntilDelivered(backend: any BackendFactory) async throws {
        let home = BehaviourHome(backend)
        try await home.with { library in
            let events = try await LibraryEventLog(library)
            let asset = try await library.addIssue(name: "i", date: Date())
                .addAsset(AssetRequest(url: home.memory.serve(try await payload(100_000), at: "a.bin"), destinationPath: "a.bin"))
            try await asset.download()
            #expect(try await asset.waitUntilFinished() == .delivered)
            try await events.waitForState(of: asset, "delivered") { $0 == .delivered }
            let states = events.states(of: asset)
            let downloading = states.firstIndex(of: .downloading)
            #expect(downloading != nil && downloading! < states.firstIndex(of: .delivered)!, "\(states)")
            #expect(states.last == .delivered, "\(states)")
        }
    }

    /// `issueDownloadCompleted` once, after the last asset's delivery; a second subscriber
    /// sees it too.
    @Test(arguments: Backends.all)
    func issueDownloadCompletedIsToldOnceAfterTheLastDelivery(backend: any BackendFactory) async throws {
        let home = BehaviourHome(backend)
        try await home.with { library in
            let (events, other) = (try await LibraryEventLog(library), try await LibraryEventLog(library))
            let issue = try await library.addIssue(name: "2026-11-21", date: Date())
            let assets = try await issue.addAssets([
                (AssetRequest(url: home.memory.serve(try await payload(50_000, seed: 1), at: "a.bin"), destinationPath: "a.bin"), nil),
                (AssetRequest(url: home.memory.serve(try await payload(50_000, seed: 2), at: "b.bin"), destinationPath: "b.bin"), nil),
            ], downloading: true)
            #expect(try await issue.waitUntilAvailable() == .available)
            try await eventually("the issue told complete", seen: "\(events.all)") { !events.completedIssues.isEmpty && !other.completedIssues.isEmpty }
            #expect(events.completedIssues == ["2026-11-21"])
            #expect(other.completedIssues == ["2026-11-21"])
            let all = events.all
            let completed = try #require(all.firstIndex(of: .issueDownloadCompleted(issue)))
            for asset in assets {
                let delivered = all.firstIndex(of: .assetStateChanged(asset, .delivered))
                #expect(delivered != nil && delivered! < completed, "\(all)")
            }
        }
    }

    @Test(arguments: Backends.all)
    func aFailureIsToldToTheLibrarysEventsWithItsMessage(backend: any BackendFactory) async throws {
        let home = BehaviourHome(backend)
        try await home.with { library in
            let events = try await LibraryEventLog(library)
            let asset = try await library.addIssue(name: "i", date: Date()).addAsset(AssetRequest(url: URL(string: "mem://example/missing.bin")!))
            try await asset.download()
            guard case .failed(let error) = try await asset.waitUntilFinished() else {
                Testing.Issue.record("not a failure")
                return
            }
            try await events.waitForState(of: asset, "failed") { $0.name == "failed" }
            #expect(events.states(of: asset).last == .failed(error.message), "\(events.states(of: asset))")
            #expect(events.completedIssues.isEmpty)
        }
    }
}

/// Whether a wait returned.
final class Returned: Sendable {
    let flag = Mutex(false)
}
