import Foundation
import Paperboy
import PaperboyTestServers
import PaperboyTesting
import Testing

/// Pause, resume, cancel and `willResumeWith`, with the source stalled at a known byte
/// (the in-memory transport's `stallAfter`): no timing decides anything.
@Suite("Library behaviour: pause, resume and cancel", .timeLimit(.minutes(3)))
struct ControlBehaviourTests {
    static let cut = 64 * 1024

    /// An asset of a new issue whose source stalls after ``cut`` bytes, downloading until it does.
    func stalled(_ home: BehaviourHome, _ library: Library, _ data: Data, delegate: RecordingDelegate? = nil) async throws -> AssetDownload {
        let url = home.memory.serve(data, at: "slow.bin", script: [.stallAfter(Self.cut)])
        let asset = try await library.addIssue(name: "i", date: Date()).addAsset(AssetRequest(url: url, destinationPath: "slow.bin"))
        try await asset.download(delegate: delegate)
        try await asset.waitForStatus("stalled at \(Self.cut) bytes") { $0.totalBytesWritten == Int64(Self.cut) }
        return asset
    }

    @Test(arguments: Backends.all)
    func pauseKeepsTheBytesAndResumeContinuesFromThem(backend: any BackendFactory) async throws {
        let home = BehaviourHome(backend)
        let data = try await payload(256 * 1024)
        try await home.with { library in
            let asset = try await stalled(home, library, data)
            try await asset.pause()
            try await asset.waitForStatus("paused") { $0.state == .waiting(.pausedByApp) }
            #expect(try await asset.status().totalBytesWritten == Int64(Self.cut), "a pause keeps the bytes")
            try await asset.resume()
            #expect(try await asset.waitUntilFinished() == .delivered)
            #expect(home.memory.jobs.map(\.offset) == [0, Int64(Self.cut)])
            let issue = try #require(try await asset.issue())
            #expect(FileManager.default.contents(atPath: issue.contentURL.appendingPathComponent("slow.bin").path) == data)
        }
    }

    /// `download()` without a delegate continues a paused asset for the delegate it has.
    @Test(arguments: Backends.all)
    func downloadWithoutADelegateContinuesAPausedAssetForItsDelegate(backend: any BackendFactory) async throws {
        let home = BehaviourHome(backend)
        let data = try await payload(256 * 1024)
        try await home.with { library in
            let delegate = RecordingDelegate()
            let asset = try await stalled(home, library, data, delegate: delegate)
            try await asset.pause()
            try await asset.waitForStatus("paused") { $0.state == .waiting(.pausedByApp) }
            try await asset.download()
            #expect(try await asset.waitUntilFinished() == .delivered)
            await delegate.waitForEnd()
            #expect(delegate.keptFiles == [data], "the delegate kept through the pause gets the file: \(delegate.events)")
            #expect(delegate.endings == 1)
        }
    }

    @Test(arguments: Backends.all)
    func aPauseIsToldToTheLibrarysEventsAndCounted(backend: any BackendFactory) async throws {
        let home = BehaviourHome(backend)
        try await home.with { library in
            let events = try await LibraryEventLog(library)
            let asset = try await stalled(home, library, try await payload(256 * 1024))
            try await asset.pause()
            try await events.waitForState(of: asset, "paused") { $0 == .waiting(.pausedByApp) }
            #expect(try await library.activity().paused == 1)
            #expect(try await library.counts()["i"]?.paused == 1)
        }
    }

    /// Cancelled while bytes arrive: the wait says `.cancelled`, the delegate gets one
    /// `.cancelled` failure, the bytes are gone.
    @Test(arguments: Backends.all)
    func cancelWhileDownloadingEndsTheWaitAndTellsTheDelegate(backend: any BackendFactory) async throws {
        let home = BehaviourHome(backend)
        try await home.with { library in
            let delegate = RecordingDelegate()
            let asset = try await stalled(home, library, try await payload(256 * 1024), delegate: delegate)
            try await asset.cancel()
            #expect(try await asset.waitUntilFinished() == .cancelled)
            await delegate.waitForEnd()
            #expect(delegate.failures.map(\.reason) == [.cancelled], "\(delegate.events)")
            #expect(delegate.endings == 1)
            let status = try await asset.status()
            #expect(status.state == .cancelled && status.totalBytesWritten == 0, "\(status.state), \(status.totalBytesWritten)")
        }
    }

    /// Issue 27's regression: `.cancelled` reached `library.events()` no more.
    @Test(arguments: Backends.all)
    func cancelWhileDownloadingIsToldToTheLibrarysEvents(backend: any BackendFactory) async throws {
        let home = BehaviourHome(backend)
        try await home.with { library in
            let events = try await LibraryEventLog(library)
            let asset = try await stalled(home, library, try await payload(256 * 1024))
            try await asset.cancel()
            #expect(try await asset.waitUntilFinished() == .cancelled)
            try await events.waitForState(of: asset, "cancelled") { $0 == .cancelled }
            let states = events.states(of: asset)
            #expect(states.contains(.downloading) && states.last == .cancelled, "\(states)")
            #expect(!states.contains(.delivered), "\(states)")
        }
    }

    @Test(arguments: Backends.all)
    func aCancelledAssetStartsAgainFromTheFirstByte(backend: any BackendFactory) async throws {
        let home = BehaviourHome(backend)
        let data = try await payload(256 * 1024)
        try await home.with { library in
            let asset = try await stalled(home, library, data)
            try await asset.cancel()
            #expect(try await asset.waitUntilFinished() == .cancelled)
            try await asset.download()
            #expect(try await asset.waitUntilFinished() == .delivered)
            #expect(home.memory.jobs.map(\.offset) == [0, 0])
            #expect(try await asset.status().totalBytesWritten == Int64(data.count))
        }
    }

    @Test(arguments: Backends.all)
    func cancellingAPausedAssetRemovesItsBytes(backend: any BackendFactory) async throws {
        let home = BehaviourHome(backend)
        try await home.with { library in
            let asset = try await stalled(home, library, try await payload(256 * 1024))
            try await asset.pause()
            try await asset.waitForStatus("paused") { $0.state == .waiting(.pausedByApp) }
            try await asset.cancel()
            #expect(try await asset.waitUntilFinished() == .cancelled)
            let status = try await asset.status()
            #expect(status.state == .cancelled && status.totalBytesWritten == 0, "\(status.state), \(status.totalBytesWritten)")
            #expect(try await library.downloadingAssets().isEmpty)
        }
    }

    /// Before a transfer continues from partial bytes the delegate may refresh the request (a
    /// new presigned URL): the rest comes from the new URL, the bytes are kept.
    @Test(arguments: Backends.all)
    func willResumeWithRefreshesTheRequestAndKeepsTheBytes(backend: any BackendFactory) async throws {
        let home = BehaviourHome(backend)
        let data = try await payload(256 * 1024)
        try await home.with { library in
            let fresh = home.memory.serve(data, at: "fresh.bin")
            let delegate = RecordingDelegate(refresh: { request in
                var refreshed = request
                refreshed.url = fresh
                return refreshed
            })
            let asset = try await stalled(home, library, data, delegate: delegate)
            try await asset.pause()
            try await asset.waitForStatus("paused") { $0.state == .waiting(.pausedByApp) }
            try await asset.resume()
            #expect(try await asset.waitUntilFinished() == .delivered)
            #expect(home.memory.jobs.map(\.url.lastPathComponent) == ["slow.bin", "fresh.bin"])
            #expect(home.memory.jobs.map(\.offset) == [0, Int64(Self.cut)])
            #expect(try await asset.status().request.url == fresh)
            #expect(delegate.events.contains(.willResume(url: home.memory.jobs[0].url)), "\(delegate.events)")
        }
    }
}
