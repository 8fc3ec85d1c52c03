import Foundation
import Testing
@testable import Paperboy
import PaperboyTesting

/// `AssetDownload.waitUntilFinished()` and `Issue.waitUntilAvailable()`: each outcome, and a
/// cancelled waiting task.
@Suite("Waits", .timeLimit(.minutes(2)))
struct WaitTests {
    let folder = TempFolder()
    var root: URL { folder.file("library") }

    func open(_ transport: InMemoryTransport) throws -> Library {
        try Library.open(at: root, transports: TransportRegistry([transport]), configuration: Library.Configuration.forTests(attempts: 1))
    }

    @Test func deliveredAssetsMakeAnAvailableIssue() async throws {
        let transport = InMemoryTransport()
        let library = try open(transport)
        let issue = try await library.addIssue(name: "i", date: Date())
        let cover = try await issue.addAsset(AssetRequest(url: transport.serve(randomData(10_000), at: "c.jpg"), destinationPath: "c.jpg", role: .cover))
        let pages = try await issue.addAsset(AssetRequest(url: transport.serve(randomData(300_000), at: "p.pdf"), destinationPath: "p.pdf"))
        for asset in [cover, pages] { try await asset.download() }
        let outcome = try await issue.waitUntilAvailable()
        guard case .available = outcome else {
            Testing.Issue.record("expected available, got \(outcome)")
            return
        }
        // Recorded before the wait returned.
        #expect(issue.status == .available)
        #expect(issue.isNew)
        #expect(issue.coverURL?.lastPathComponent == "c.jpg")
        // An asset that ended already answers at once.
        guard case .delivered = try await pages.waitUntilFinished() else {
            Testing.Issue.record("delivered asset not reported delivered")
            return
        }
        await library.close()
    }

    @Test func aFailureIsReportedWithItsError() async throws {
        let transport = InMemoryTransport()
        let library = try open(transport)
        let issue = try await library.addIssue(name: "i", date: Date())
        let good = try await issue.addAsset(AssetRequest(url: transport.serve(Data("ok".utf8), at: "ok.txt"), destinationPath: "ok.txt"))
        let missing = try await issue.addAsset(AssetRequest(url: URL(string: "mem://example/missing.pdf")!))
        try await good.download()
        try await missing.download()
        let outcome = try await missing.waitUntilFinished()
        guard case .failed(let error) = outcome else {
            Testing.Issue.record("expected a failure, got \(outcome)")
            return
        }
        #expect(error.transportError?.code == .notFound)
        #expect(error.message.contains("missing.pdf"), "\(error.message)")
        guard case .incomplete(let missed) = try await issue.waitUntilAvailable() else {
            Testing.Issue.record("an issue with a failed asset reported available")
            return
        }
        #expect(Array(missed.keys) == [missing])
        await library.close()
    }

    @Test func aCancelledDownloadEndsTheWait() async throws {
        let transport = InMemoryTransport()
        let url = transport.serve(randomData(500_000), at: "s.bin", script: [.stallAfter(100_000)])
        let library = try open(transport)
        let asset = try await library.addIssue(name: "i", date: Date()).addAsset(AssetRequest(url: url))
        let waiting = Task { try await asset.waitUntilFinished() }
        try await asset.download()
        try await eventually("stall") { asset.totalBytesWritten == 100_000 }
        try await asset.cancel()
        guard case .cancelled = try await waiting.value else {
            Testing.Issue.record("expected cancelled")
            return
        }
        await library.close()
    }

    /// Cancelling the waiting task ends the wait at once; the download goes on.
    @Test func cancellingTheWaitingTaskLeavesTheDownloadRunning() async throws {
        let transport = InMemoryTransport()
        let url = transport.serve(randomData(500_000), at: "s.bin", script: [.stallAfter(100_000)])
        let library = try open(transport)
        let issue = try await library.addIssue(name: "i", date: Date())
        let asset = try await issue.addAsset(AssetRequest(url: url))
        try await asset.download()
        try await eventually("stall") { asset.totalBytesWritten == 100_000 }
        let waiters = { library.scheduler.state.withLock { $0.assetWaiters[asset.identifier]?.count ?? 0 } }
        let assetWait = Task { try await asset.waitUntilFinished() }
        let issueWait = Task { try await issue.waitUntilAvailable() }
        try await eventually("both tasks waiting", seen: "\(waiters()) waiting") { waiters() == 2 }
        assetWait.cancel()
        issueWait.cancel()
        // The transfer is stalled for good: returning at all shows the wait did not wait for it.
        await #expect(throws: CancellationError.self) { try await assetWait.value }
        await #expect(throws: CancellationError.self) { try await issueWait.value }
        #expect(waiters() == 0)
        #expect(asset.state == .downloading)
        // A task cancelled before it waits does not wait either.
        let early = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await asset.waitUntilFinished()
        }
        await #expect(throws: CancellationError.self) { try await early.value }
        #expect(library.scheduler.state.withLock { $0.assetWaiters.isEmpty })

        // Closing the library ends the waits that remain.
        let closing = Task { try await asset.waitUntilFinished() }
        try await eventually("a task waiting", seen: "\(waiters()) waiting") { waiters() == 1 }
        await library.close()
        guard case .closed = try await closing.value else {
            Testing.Issue.record("expected closed")
            return
        }
    }
}
