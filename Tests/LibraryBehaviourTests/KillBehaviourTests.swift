import BehaviourLives
import Foundation
import Paperboy
import PaperboyTestServers
import PaperboyTesting
import Synchronization
import Testing

/// kill -9 and relaunch: the process serving the library (the app in process; the daemon) is
/// killed with SIGKILL at a point of a first life, and the relaunched library keeps every
/// promise: bytes on disk are resumed from, a file not handed over is delivered again (at least
/// once), a pause, a failure and a delivery stay what they were.
@Suite("Library behaviour: kill -9 and relaunch", .timeLimit(.minutes(3)))
struct KillBehaviourTests {
    /// An HTTP source whose first response stops after `cut` bytes and whose later ones wait at
    /// `gate` before serving the range asked for. Without `cut`, the first one waits too: a life
    /// killed before its first byte may be killed before its request reached the source, and the
    /// relaunched library's request is then the first (a stalled one, it failed on the idle timeout).
    final class StallingSource: Sendable {
        let data: Data
        let server: FaultServer
        let gate = DispatchSemaphore(value: 0)

        init(_ data: Data, cut: Int?) throws {
            self.data = data
            let gate = gate
            server = try FaultServer { request in
                if request.index == 0, let cut { return .serving(data, for: request, fault: .stallAfter(cut)) }
                _ = gate.wait(timeout: .now() + 60)
                return .serving(data, for: request)
            }
        }

        var url: URL { server.url("/big.bin") }

        /// Lets every waiting and later request through.
        func release() {
            for _ in 0..<8 { gate.signal() }
        }

        /// Where the second request's range started (`nil`: no range, or no second request).
        var resumedAt: Int64? {
            let requests = server.requests
            guard requests.count > 1, let range = requests[1].header("range"), range.hasPrefix("bytes=") else { return nil }
            return Int64(range.dropFirst(6).prefix { $0 != "-" })
        }

        deinit { server.stop() }
    }

    /// Killed while bytes arrive: the relaunched library asks the source for the rest only, and
    /// the delegate attached at launch hears `didResumeAt` with the bytes kept before any progress.
    @Test(arguments: Backends.all)
    func killedMidTransferTheRelaunchResumesFromTheBytesOnDisk(backend: any BackendFactory) async throws {
        let home = BehaviourHome(backend)
        let source = try StallingSource(try await payload(2_000_000, seed: 3), cut: 1_000_000)
        try await home.withRelaunched(after: .midTransfer(url: source.url, bytes: 1)) { library in
            let pending = try await library.downloadingAssets()
            try #require(pending.count == 1, "\(pending)")
            let delegate = RecordingDelegate()
            try await pending[0].download(delegate: delegate)
            source.release()
            #expect(try await pending[0].waitUntilFinished() == .delivered)
            await delegate.waitForEnd()
            let offset = try #require(source.resumedAt, "the second request: \(source.server.requests.map(\.headers))")
            #expect(offset > 0)
            // `willResumeWith` may come first; then `didResumeAt`, before any progress.
            let told = delegate.events.filter { if case .willResume = $0 { false } else { true } }
            #expect(told.first == .resumed(total: offset, expected: Int64(source.data.count)), "\(delegate.events)")
            #expect(delegate.keptFiles == [source.data])
        }
    }

    /// Killed inside `didFinish`: the file is listed at launch as finished and delivered again.
    @Test(arguments: Backends.all)
    func killedInsideDidFinishTheFileIsDeliveredAgain(backend: any BackendFactory) async throws {
        let home = BehaviourHome(backend)
        let data = try await payload(300_000, seed: 4)
        try await home.withRelaunched(after: .insideDidFinish(url: try home.file("source.bin", data))) { try await expectRedelivered(data, by: $0) }
    }

    /// Killed after a delegate threw from `didFinish`: the file kept in the inbox is delivered.
    @Test(arguments: Backends.all)
    func killedAfterADelegateThrewTheKeptFileIsDelivered(backend: any BackendFactory) async throws {
        let home = BehaviourHome(backend)
        let data = try await payload(300_000, seed: 5)
        try await home.withRelaunched(after: .afterDelegateThrew(url: try home.file("source.bin", data))) { try await expectRedelivered(data, by: $0) }
    }

    /// The README's relaunch loop gets the one file waiting, byte for byte.
    func expectRedelivered(_ data: Data, by library: Library) async throws {
        let pending = try await library.downloadingAssets()
        try #require(pending.count == 1, "\(pending)")
        let status = try await pending[0].status()
        #expect(status.state == .finished && status.totalBytesWritten == Int64(data.count), "\(status.state), \(status.totalBytesWritten)")
        let delegate = RecordingDelegate()
        for asset in try await library.downloadingAssets() { try await asset.download(delegate: delegate) }
        #expect(try await pending[0].waitUntilFinished() == .delivered)
        #expect(delegate.keptFiles == [data], "\(delegate.events)")
        #expect(try await library.downloadingAssets().isEmpty)
    }

    /// Killed as soon as `pause()` returned: still paused after the relaunch, its bytes kept;
    /// `download()` asks the source for the rest.
    @Test(arguments: Backends.all)
    func killedWhilePausedItStaysPausedUntilResumed(backend: any BackendFactory) async throws {
        let home = BehaviourHome(backend)
        let source = try StallingSource(try await payload(2_000_000, seed: 6), cut: 500_000)
        try await home.withRelaunched(after: .whilePaused(url: source.url, bytes: 1)) { library in
            let pending = try await library.downloadingAssets()
            try #require(pending.count == 1, "\(pending)")
            let status = try await pending[0].status()
            // Recorded before `pause()` returned (the first life's store batches for an hour).
            #expect(status.state == .waiting(.pausedByApp), "\(status.state)")
            #expect(source.server.requests.count == 1, "a paused asset is not resumed by a relaunch")
            #expect(status.totalBytesWritten > 0)
            source.release()
            let delegate = RecordingDelegate()
            try await pending[0].download(delegate: delegate)
            #expect(try await pending[0].waitUntilFinished() == .delivered)
            #expect((source.resumedAt ?? 0) > 0, "continued from the bytes kept")
            #expect(delegate.keptFiles == [source.data])
        }
    }

    /// Killed as soon as `download()` returned, before a byte came: the relaunched library lists
    /// the asset among those to reconnect and downloads it.
    @Test(arguments: Backends.all)
    func killedOnceDownloadReturnedTheAssetIsStillAskedFor(backend: any BackendFactory) async throws {
        let home = BehaviourHome(backend)
        let source = try StallingSource(try await payload(300_000, seed: 8), cut: nil)
        try await home.withRelaunched(after: .afterDownloadCall(url: source.url)) { library in
            let pending = try await library.downloadingAssets()
            try #require(pending.count == 1, "the asset asked for is listed at launch: \(pending)")
            let state = try await pending[0].status().state
            #expect(state != .idle, "\(state)")
            let delegate = RecordingDelegate()
            try await pending[0].download(delegate: delegate)
            source.release()
            let outcome = try await pending[0].waitUntilFinished()
            #expect(outcome == .delivered, "\(outcome) after \(source.server.requests.count) requests")
            #expect(delegate.keptFiles == [source.data])
        }
    }

    /// Killed as soon as `cancel()` returned, while the transfer was stopping: the relaunched
    /// library neither continues it nor keeps its bytes; asked for again, it starts from zero.
    @Test(arguments: Backends.all)
    func killedOnceCancelReturnedTheAssetStaysCancelled(backend: any BackendFactory) async throws {
        let home = BehaviourHome(backend)
        let source = try StallingSource(try await payload(2_000_000, seed: 9), cut: 500_000)
        try await home.withRelaunched(after: .afterCancel(url: source.url, bytes: 1)) { library in
            #expect(try await library.downloadingAssets().isEmpty)
            let assets = try await library.issue(named: FirstLife.issueName)?.assets() ?? []
            try #require(assets.count == 1, "\(assets)")
            let status = try await assets[0].status()
            #expect(status.state == .cancelled && status.totalBytesWritten == 0, "\(status.state), \(status.totalBytesWritten)")
            #expect(source.server.requests.count == 1, "a cancelled asset is not resumed by a relaunch")
            source.release()
            let delegate = RecordingDelegate()
            try await assets[0].download(delegate: delegate)
            #expect(try await assets[0].waitUntilFinished() == .delivered)
            #expect(source.resumedAt == nil, "started again from zero: \(source.server.requests.map(\.headers))")
            #expect(delegate.keptFiles == [source.data])
        }
    }

    /// A failure recorded before the kill is the same failure after it, reason included (a 404
    /// once read back as `.other` through the daemon).
    @Test(arguments: Backends.all)
    func aFailureRecordedBeforeTheKillKeepsItsReason(backend: any BackendFactory) async throws {
        let server = try FaultServer { _ in ServerResponse(status: 404) }
        defer { server.stop() }
        for (name, url) in [("a missing file", URL(fileURLWithPath: "/nonexistent/paperboy/missing.bin")), ("HTTP 404", server.url("/missing.bin"))] {
            let home = BehaviourHome(backend)
            let session = try await home.relaunched(after: .afterFailure(url: url))
            let assets = try await session.library.issue(named: FirstLife.issueName)?.assets() ?? []
            try #require(assets.count == 1, "\(name): \(assets)")
            // Recorded before the wait returned (the first life's store batches for an hour), and
            // not tried again at launch.
            let state = try await assets[0].status().state
            guard state.name == "failed", case .failed(let failure) = try await assets[0].waitUntilFinished() else {
                Testing.Issue.record("\(name): \(state) after the relaunch, not failed")
                await session.close()
                continue
            }
            #expect(failure.reason == .notFound && failure.code == .transport && failure.transportCode == .notFound
                    && !failure.isRetryable, "\(name): \(failure)")
            #expect(try await assets[0].status().failure == failure, "\(name)")
            await session.close()
        }
    }

    /// A delivered issue is still available and new after a kill, its file in place.
    @Test(arguments: Backends.all)
    func aDeliveryBeforeTheKillStaysDelivered(backend: any BackendFactory) async throws {
        let home = BehaviourHome(backend)
        let data = try await payload(100_000, seed: 7)
        try await home.withRelaunched(after: .afterDelivery(url: try home.file("source.bin", data), destinationPath: "files/a.bin")) { library in
            let issue = try #require(try await library.issue(named: FirstLife.issueName))
            #expect(try await issue.status() == .available)
            #expect(try await issue.isNew())
            #expect(try await library.badgeCount() == 1)
            #expect(try await library.downloadingAssets().isEmpty)
            #expect(try await issue.assets().asyncMap { try await $0.status().state } == [.delivered])
            #expect(FileManager.default.contents(atPath: issue.contentURL.appendingPathComponent("files/a.bin").path) == data)
        }
    }
}

extension Array {
    func asyncMap<T>(_ transform: (Element) async throws -> T) async rethrows -> [T] {
        var result: [T] = []
        for element in self { result.append(try await transform(element)) }
        return result
    }
}
