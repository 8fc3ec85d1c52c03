import Foundation
import Paperboy
import PaperboyClient
import PaperboyDaemon
import PaperboyTestServers
import PaperboyTesting
import Testing

/// What a library opened with `Library.connect` does that `PaperboyClient` could not (issue 27's
/// "missing remotely"), each checked against the daemon's own library: marking read, the issue
/// being read, removing an issue, waiting for an issue, one asset's events, a corrected checksum,
/// the delegate's `willResumeWith`; and the synchronous reads, answered from what the daemon
/// last reported.
@Suite("Library.connect: the whole API through the daemon", .timeLimit(.minutes(2)))
struct DaemonBackendTests {
    let home = ClientHome()
    let date = Date(timeIntervalSince1970: 1_795_000_000)

    @Test func markReadTheIssueBeingReadAndRemovingAnIssueGoThroughTheDaemon() async throws {
        let data = randomData(10_000, seed: 1)
        try await home.withDaemon { library in
            let client = try await Library.connect(socket: home.socket)
            defer { client.disconnect() }
            let issue = try await client.addIssue(name: "2026-11-21", date: date)
            let asset = try await issue.addAsset(AssetRequest(url: home.transport.serve(data, at: "a.bin"), destinationPath: "a.bin"))
            try await asset.download()
            #expect(try await issue.waitUntilAvailable() == .available)
            #expect(try await issue.isNew())
            #expect(try await client.badgeCount() == 1)

            // Being read is not being marked read (in process neither).
            try await client.setCurrentlyReadingIssue(issue)
            #expect(try await client.currentlyReadingIssue() == issue)
            #expect(try await library.currentlyReadingIssue()?.name == issue.name, "the daemon's library records it")
            #expect(try await issue.isNew(), "setting the issue being read leaves it new")
            #expect(client.currentlyReadingIssue == issue, "the synchronous read: what was last reported")

            try await issue.markRead()
            #expect(try await issue.isNew() == false)
            #expect(try await library.issue(named: issue.name)?.isNew() == false)
            #expect(try await client.badgeCount() == 0)
            #expect(issue.isNew == false && client.badgeCount == 0, "the synchronous reads follow the replies")

            try await client.removeIssue(issue)
            #expect(try await library.issue(named: issue.name) == nil)
            #expect(try await client.issue(named: issue.name) == nil)
            #expect(try await client.currentlyReadingIssue() == nil)
            #expect(!FileManager.default.fileExists(atPath: issue.contentURL.path), "its content is gone")
            #expect(client.issues.isEmpty && issue.assets.isEmpty, "the synchronous reads forget it")
            let again = await #expect(throws: LibraryError.self) { try await issue.markRead() }
            #expect(again?.code == .issueNotFound)
        }
    }

    /// `Issue.addAssets` through a daemon: more assets than one `ADDASSETS` takes (4,096) come
    /// back as handles in order, the daemon's library holds them in that order, and the
    /// synchronous reads know each one's request, user info and state at once.
    @Test func addingMoreAssetsThanOneRequestTakesKeepsTheirOrder() async throws {
        let count = 5_000
        try await home.withDaemon { library in
            let client = try await Library.connect(socket: home.socket)
            defer { client.disconnect() }
            let issue = try await client.addIssue(name: "2026-11-21", date: date)
            let requests = (0..<count).map { index in
                (AssetRequest(url: URL(string: "http://192.0.2.1/a\(index)")!, destinationPath: "a\(index)"),
                 index % 1_000 == 0 ? JSONValue.object(["n": .number(Double(index))]) : JSONValue?.none)
            }
            let added = try await issue.addAssets(requests)
            #expect(added.count == count)
            let stored = try #require(try await library.issue(named: issue.name)).assetStatuses
            #expect(stored.map(\.identifier) == added.map(\.identifier))
            #expect(added.map { $0.request?.destinationPath } == (0..<count).map { "a\($0)" })
            #expect(added[4_000].userInfo == .object(["n": .number(4_000)]) && added[1].userInfo == nil)
            #expect(added.allSatisfy { $0.state == .idle })
        }
    }

    @Test func waitUntilAvailableSaysWhichAssetsWereNotDelivered() async throws {
        try await home.withDaemon { library in
            let client = try await Library.connect(socket: home.socket)
            defer { client.disconnect() }
            let issue = try await client.addIssue(name: "partial", date: date)
            let good = try await issue.addAsset(AssetRequest(url: home.transport.serve(randomData(5_000), at: "g.bin"), destinationPath: "g.bin"))
            let missing = try await issue.addAsset(AssetRequest(url: URL(string: "mem://example/missing.bin")!, destinationPath: "m.bin"))
            try await good.download()
            try await missing.download()
            let outcome = try await issue.waitUntilAvailable()
            let inProcess = try await #require(library.issue(named: "partial")).waitUntilAvailable()
            guard case .incomplete(let remote) = outcome, case .incomplete(let local) = inProcess else {
                Issue.record("expected incomplete both ways: \(outcome), \(inProcess)")
                return
            }
            #expect(Array(remote.keys) == [missing])
            guard case .failed(let error)? = remote[missing], case .failed(let localError)? = local.first?.value else {
                Issue.record("expected the missing asset to fail: \(remote) \(local)")
                return
            }
            #expect(error == localError && error.reason == localError.reason, "the same LibraryError both ways")
        }
    }

    @Test func oneAssetsEventsComeThroughTheDaemonAndItsFileIsReadable() async throws {
        let data = randomData(300_000, seed: 3)
        try await home.withDaemon { _ in
            let client = try await Library.connect(socket: home.socket)
            defer { client.disconnect() }
            let issue = try await client.addIssue(name: "events", date: date)
            let asset = try await issue.addAsset(AssetRequest(url: home.transport.serve(data, at: "e.bin")))
            var seen: [DownloadEvent] = []
            var read: Data?
            for await event in try await asset.events() {
                seen.append(event)
                if case .finished(let url) = event { read = FileManager.default.contents(atPath: url.path) }
            }
            #expect(read == data, "the file in the daemon's inbox, readable until the next event")
            #expect(seen.contains { if case .progress = $0 { true } else { false } }, "\(seen)")
            #expect(try await asset.waitUntilFinished() == .delivered, "acknowledged once the sequence moved on")
        }
    }

    @Test func aCorrectedChecksumIsSentToTheDaemon() async throws {
        let data = randomData(20_000, seed: 4)
        try await home.withDaemon { library in
            let client = try await Library.connect(socket: home.socket)
            defer { client.disconnect() }
            let issue = try await client.addIssue(name: "sums", date: date)
            let wrong = String(repeating: "0", count: 64)
            let asset = try await issue.addAsset(AssetRequest(url: home.transport.serve(data, at: "s.bin"), sha256: wrong, destinationPath: "s.bin"))
            try await asset.download()
            guard case .failed(let error) = try await asset.waitUntilFinished() else {
                Issue.record("a wrong checksum should fail")
                return
            }
            #expect(error.code == .checksumMismatch)
            let right = sha256Hex(data)
            try await asset.updateExpectedSHA256(right)
            #expect(try await library.asset(identifier: asset.identifier)?.status().request.sha256 == right, "the daemon's library has it")
            try await asset.download()
            #expect(try await asset.waitUntilFinished() == .delivered)
            let refused = await #expect(throws: LibraryError.self) { try await asset.updateExpectedSHA256("xyz") }
            #expect(refused?.code == .invalidRequest)
        }
    }

    @Test func willResumeWithRefreshesTheRequestOfAClaimedTransfer() async throws {
        let data = randomData(200_000, seed: 5)
        try await home.withDaemon { library in
            let client = try await Library.connect(socket: home.socket)
            defer { client.disconnect() }
            let issue = try await client.addIssue(name: "fresh", date: date)
            let stale = home.transport.serve(data, at: "stale.bin", script: [.stallAfter(64 * 1024)])
            let fresh = home.transport.serve(data, at: "fresh.bin")
            let delegate = InboxReader(refresh: { request in
                var refreshed = request
                refreshed.url = fresh
                return refreshed
            })
            let asset = try await issue.addAsset(AssetRequest(url: stale))
            try await asset.download(delegate: delegate)
            let local = try #require(await library.asset(identifier: asset.identifier))
            try await eventually("the transfer to stall", seen: "\(local.totalBytesWritten)") { local.totalBytesWritten >= 64 * 1024 }
            try await asset.pause()
            try await eventually("the pause", seen: "\(local.state)") { local.state == .waiting(.pausedByApp) }
            try await asset.resume()
            #expect(try await asset.waitUntilFinished() == .delivered)
            #expect(delegate.resumedWith.map(\.url) == [stale], "asked once, with the request it had")
            #expect(delegate.finished.first?.data == data)
            #expect(try await local.status().request.url == fresh, "the daemon resumed with the refreshed request")
        }
    }

    @Test func theSynchronousReadsAnswerWithWhatTheDaemonLastReported() async throws {
        try await home.withDaemon { library in
            _ = try await library.addIssue(name: "old", date: date.addingTimeInterval(-86_400))
            let client = try await Library.connect(socket: home.socket)
            defer { client.disconnect() }
            #expect(client.issues.isEmpty, "nothing reported yet: nothing known, nothing waited for")
            #expect(try await client.issues().map(\.name) == ["old"])
            #expect(client.issues.map(\.name) == ["old"])
            let issue = try await client.addIssue(name: "new", date: date)
            #expect(client.issues.map(\.name) == ["new", "old"], "newest first, as in process")
            let asset = try await issue.addAsset(AssetRequest(url: home.transport.serve(randomData(1_000), at: "n.bin")),
                                                 userInfo: ["page": 1])
            #expect(asset.userInfo == ["page": 1] && asset.state == .idle && asset.issue == issue)
            #expect(issue.assets == [asset] && issue.status == .notDownloaded)
            #expect(client.downloadingAssets.isEmpty)
            #expect(client.bandwidthLimiter.statistics.limit == nil && client.networkStatus.kind == .other,
                    "the in-process members do what they document, without trapping")
        }
    }
}
