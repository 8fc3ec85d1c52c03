import Foundation
import Testing
@testable import Paperboy
import PaperboyTesting

/// The shared API of `Library`, `Issue` and `AssetDownload` over a backend: the async methods
/// agree with the in-process properties, handles belong to their backend, and a library served
/// by a backend other than `LocalBackend` (as a daemon's will be) works through the shared API
/// while the in-process members do what their documentation says instead of trapping.
@Suite("Library backends", .timeLimit(.minutes(2)))
struct LibraryBackendTests {
    let folder = TempFolder()
    let data = Data((0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })

    func open(_ transport: InMemoryTransport, at name: String = "library") throws -> Library {
        try Library.open(at: folder.file(name), transports: TransportRegistry([transport]),
                         configuration: Library.Configuration.forTests(attempts: 1))
    }

    @Test func theAsyncMethodsAgreeWithTheInProcessProperties() async throws {
        let transport = InMemoryTransport()
        let library = try open(transport)
        let issue = try await library.addIssue(name: "2026-11-21", date: Date(timeIntervalSince1970: 2_000))
        try await library.addIssue(name: "2026-11-20", date: Date(timeIntervalSince1970: 1_000))
        let asset = try await issue.addAsset(AssetRequest(url: transport.serve(data, at: "a.bin"), destinationPath: "a.bin"),
                                             userInfo: ["k": "v"])
        try await asset.download()
        #expect(try await asset.waitUntilFinished() == .delivered)
        try await library.setCurrentlyReadingIssue(issue)

        #expect(try await library.issues() == library.issues)
        #expect(try await library.issues().map(\.name) == ["2026-11-21", "2026-11-20"])
        #expect(try await library.badgeCount() == 1)
        #expect(try await library.currentlyReadingIssue() == issue)
        #expect(try await library.downloadingAssets().isEmpty)
        #expect(try await issue.assets() == [asset])
        #expect(try await issue.status() == .available)
        #expect(try await issue.isNew())
        #expect(try await asset.issue() == issue)
        #expect(try await library.activity() == library.activity)
        #expect(try await library.counts()["2026-11-21"]?.delivered == 1)
        let status = try await asset.status()
        #expect(status.state == .delivered && status.totalBytesWritten == Int64(data.count) && status.identifier == asset.identifier)
        #expect(asset.userInfo == ["k": "v"])
        try await issue.markRead()
        #expect(try await library.badgeCount() == 0)
        #expect(try await !issue.isNew())
        await library.close()
    }

    @Test func resumeContinuesAPausedAssetForTheDelegatesItHas() async throws {
        let transport = InMemoryTransport()
        let cut = 64 * 1024
        let url = transport.serve(data, at: "p.bin", script: [.stallAfter(cut)])
        let library = try open(transport)
        let asset = try await library.addIssue(name: "i", date: Date()).addAsset(AssetRequest(url: url))
        let delegate = RecordingDelegate()
        try await asset.download(delegate: delegate)
        try await eventually("stall") { asset.totalBytesWritten == Int64(cut) }
        try await asset.pause()
        try await eventually("paused") { asset.state == .waiting(.pausedByApp) }
        try await asset.resume()
        await delegate.waitForEnd()
        #expect(delegate.keptFiles == [data])
        #expect(transport.jobs.map(\.offset) == [0, Int64(cut)])
        await library.close()
    }

    @Test func statusOfARemovedAssetIsAssetNotFound() async throws {
        let transport = InMemoryTransport()
        let library = try open(transport)
        let issue = try await library.addIssue(name: "i", date: Date())
        let asset = try await issue.addAsset(AssetRequest(url: transport.serve(data, at: "a.bin")))
        #expect(try await asset.status().state == .idle)
        try await library.removeIssue(issue)
        let error = try await #require(throws: LibraryError.self) { try await asset.status() }
        #expect(error.code == .assetNotFound && error.message.contains(asset.identifier))
        #expect(try await asset.issue() == nil)
        await library.close()
    }

    @Test func handlesAreEqualOnlyWithinTheirLibrary() async throws {
        let transport = InMemoryTransport()
        let first = try open(transport, at: "one")
        let second = try open(transport, at: "two")
        let one = try await first.addIssue(name: "i", date: Date(timeIntervalSince1970: 1_000))
        let two = try await second.addIssue(name: "i", date: Date(timeIntervalSince1970: 1_000))
        #expect(try await first.issue(named: "i") == one)
        #expect(one != two)
        #expect(one.contentURL.path == first.root.appendingPathComponent("Issues/i").path)
        await first.close()
        await second.close()
    }

    @Test func anotherBackendServesTheSharedAPIAndTheInProcessMembersStayDefined() async throws {
        let transport = InMemoryTransport()
        let local = try open(transport)
        let library = Library(backend: ForwardingBackend(try #require(local.local)))
        #expect(library.local == nil)
        #expect(library.root == local.root)

        let issue = try await library.addIssue(name: "i", date: Date())
        let asset = try await issue.addAsset(AssetRequest(url: transport.serve(data, at: "a.bin")))
        let events = try await asset.events()
        var finished = false
        for await event in events { if case .finished = event { finished = true } }
        #expect(finished)
        #expect(try await asset.waitUntilFinished() == .delivered)
        #expect(try await issue.waitUntilAvailable() == .available)
        #expect(try await library.badgeCount() == 1)
        #expect(try await library.issue(named: "i") == issue)
        #expect(try await library.issue(named: "i") != local.issues.first)   // another backend's handle

        // What needs this process's scheduler or files is documented, and never traps.
        #expect(asset.bytesOnDisk == 0)
        #expect(library.recordedBandwidthStatistics == nil)
        #expect(library.lastContentRefresh == nil)
        #expect(library.networkStatus.kind == .other)
        library.setBandwidthSchedule(nil)
        library.setPerTransferBandwidthLimit(1_000)
        #expect(library.bandwidthLimiter !== local.bandwidthLimiter)
        await library.waitUntilIdle()
        #expect(throws: LibraryError.self) { try library.damagedRows }
        #expect(throws: LibraryError.self) { try issue.forEachAssetStatus { _ in } }
        #expect(throws: LibraryError.self) { try issue.forEachAssetListing { _ in } }
        let fetch = try await #require(throws: LibraryError.self) { try await library.fetchData(from: transport.serve(data, at: "c")) }
        #expect(fetch.code == .invalidRequest)
        await local.close()
    }
}

/// A backend that is not `LocalBackend` (as a daemon's is not), forwarding to one.
private final class ForwardingBackend: LibraryBackend {
    let base: LocalBackend

    init(_ base: LocalBackend) { self.base = base }

    var root: URL { base.root }

    private func issue(_ issue: Paperboy.Issue) -> Paperboy.Issue { Paperboy.Issue(name: issue.name, date: issue.date, contentURL: issue.contentURL, backend: self) }
    private func asset(_ asset: AssetDownload) -> AssetDownload {
        AssetDownload(identifier: asset.identifier, issueName: asset.issueName, backend: self)
    }
    private func outcome(_ outcome: IssueOutcome) -> IssueOutcome {
        guard case .incomplete(let missing) = outcome else { return outcome }
        return .incomplete(Dictionary(uniqueKeysWithValues: missing.map { (asset($0.key), $0.value) }))
    }

    func issues() async throws(LibraryError) -> [Paperboy.Issue] { base.issues().map(issue) }
    func issue(named name: String) async throws(LibraryError) -> Paperboy.Issue? { base.issue(named: name).map(issue) }
    func addIssue(name: String, date: Date) async throws(LibraryError) -> Paperboy.Issue { issue(try base.addIssue(name: name, date: date)) }
    func removeIssue(named name: String) async throws(LibraryError) { try await base.removeIssue(named: name) }
    func currentlyReadingIssue() async throws(LibraryError) -> Paperboy.Issue? { base.currentlyReadingIssue().map(issue) }
    func setCurrentlyReadingIssue(named name: String?) async throws(LibraryError) { try base.setCurrentlyReadingIssue(named: name) }
    func badgeCount() async throws(LibraryError) -> Int { base.badgeCount() }
    func downloadingAssets() async throws(LibraryError) -> [AssetDownload] { base.downloadingAssets().map(asset) }
    func asset(identifier: String) async throws(LibraryError) -> AssetDownload? { base.asset(identifier: identifier).map(asset) }
    func events(where wants: (@Sendable (LibraryEvent) -> Bool)?) async throws(LibraryError) -> AsyncStream<LibraryEvent> {
        base.events(where: wants)
    }
    func activity() async throws(LibraryError) -> LibraryActivity { try base.activity() }
    func counts() async throws(LibraryError) -> [String: AssetCounts] { try base.counts() }
    func purge(keep: Int?, budgetBytes: Int64?) async throws(LibraryError) -> [String] {
        try await base.purge(keep: keep, budgetBytes: budgetBytes)
    }
    func contentAvailable(payload: JSONValue?, throttle: Duration, dontThrottle: Bool, now: Date?) async throws(LibraryError)
        -> ContentAvailableResult {
        try base.contentAvailable(payload: payload, throttle: throttle, dontThrottle: dontThrottle, now: now)
    }
    func shelf() async throws(LibraryError) -> LibraryShelf { try base.shelf() }
    func conditions() async throws(LibraryError) -> LibraryConditions { base.conditions() }
    func waitUntilSettled(ofIssues issues: [String], includingNetworkWaits: Bool,
                          retryWaitLimit: RetryWaitLimit?) async throws(LibraryError) -> Int {
        await base.waitUntilSettled(ofIssues: issues, includingNetworkWaits: includingNetworkWaits,
                                    retryWaitLimit: retryWaitLimit)
    }
    func forEachAssetListing(ofIssue name: String, _ body: (AssetListing) -> Void) async throws(LibraryError) {
        try base.forEachAssetListing(ofIssue: name, body)
    }
    func close() async {}
    func assets(ofIssue name: String) async throws(LibraryError) -> [AssetDownload] { base.assets(ofIssue: name).map(asset) }
    func addAssets(_ requests: [(AssetRequest, JSONValue?)], toIssue name: String, downloading: Bool) async throws(LibraryError)
        -> [AssetDownload] {
        try base.addAssets(requests, toIssue: name, downloading: downloading).map(asset)
    }
    func markRead(issue name: String) async throws(LibraryError) { base.markRead(issue: name) }
    func status(ofIssue name: String) async throws(LibraryError) -> Paperboy.Issue.Status { try base.status(ofIssue: name) }
    func isNew(issue name: String) async throws(LibraryError) -> Bool { base.isNew(issue: name) }
    func waitUntilAvailable(issue name: String) async throws(CancellationError) -> IssueOutcome {
        outcome(try await base.waitUntilAvailable(issue: name))
    }
    func status(ofAsset identifier: String) async throws(LibraryError) -> AssetStatus { try base.status(ofAsset: identifier) }
    func download(_ asset: AssetDownload, delegate: (any AssetDownloadDelegate)?) async throws(LibraryError) {
        try await base.download(asset, delegate: delegate)
    }
    func pause(asset identifier: String) async throws(LibraryError) { try await base.pause(asset: identifier) }
    func resume(asset identifier: String) async throws(LibraryError) { try await base.resume(asset: identifier) }
    func cancel(asset identifier: String) async throws(LibraryError) { try await base.cancel(asset: identifier) }
    func events(of asset: AssetDownload) async throws(LibraryError) -> DownloadEvents { try await base.events(of: asset) }
    func waitUntilFinished(asset identifier: String) async throws(CancellationError) -> AssetOutcome {
        try await base.waitUntilFinished(asset: identifier)
    }
    func updateExpectedSHA256(_ sha256: String?, ofAsset identifier: String) async throws(LibraryError) {
        try base.updateExpectedSHA256(sha256, ofAsset: identifier)
    }
    func lastKnownIssues() -> [Paperboy.Issue] { base.lastKnownIssues().map(issue) }
    func lastKnownIssue(named name: String) -> Paperboy.Issue? { base.lastKnownIssue(named: name).map(issue) }
    func lastKnownCurrentlyReadingIssue() -> Paperboy.Issue? { base.lastKnownCurrentlyReadingIssue().map(issue) }
    func lastKnownBadgeCount() -> Int { base.lastKnownBadgeCount() }
    func lastKnownDownloadingAssets() -> [AssetDownload] { base.lastKnownDownloadingAssets().map(asset) }
    func lastKnownActivity() throws(LibraryError) -> LibraryActivity { try base.lastKnownActivity() }
    func lastKnownCounts() throws(LibraryError) -> [String: AssetCounts] { try base.lastKnownCounts() }
    func lastKnownCounts(ofIssue name: String) throws(LibraryError) -> AssetCounts { try base.lastKnownCounts(ofIssue: name) }
    func lastKnownAssets(ofIssue name: String) -> [AssetDownload] { base.lastKnownAssets(ofIssue: name).map(asset) }
    func lastKnownIsNew(issue name: String) -> Bool { base.lastKnownIsNew(issue: name) }
    func lastKnownCoverURL(ofIssue name: String) -> URL? { base.lastKnownCoverURL(ofIssue: name) }
    func lastKnownStatus(ofAsset identifier: String) -> AssetStatus? { base.lastKnownStatus(ofAsset: identifier) }
    func lastKnownUserInfo(ofAsset identifier: String) -> JSONValue? { base.lastKnownUserInfo(ofAsset: identifier) }
}
