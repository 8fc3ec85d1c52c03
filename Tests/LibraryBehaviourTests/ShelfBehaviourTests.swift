import Foundation
import Paperboy
import PaperboyTestServers
import PaperboyTesting
import Testing

/// The shelf: issues and their assets, the badge and `markRead`, the issue being read, removal,
/// corrected checksums, counts, and the handles' equality.
@Suite("Library behaviour: issues, badge and handles", .timeLimit(.minutes(3)))
struct ShelfBehaviourTests {
    static let day: TimeInterval = 86_400
    static let start = Date(timeIntervalSince1970: 1_795_000_000)

    @Test(arguments: Backends.all)
    func issuesAreListedNewestFirstAndFoundByName(backend: any BackendFactory) async throws {
        let home = BehaviourHome(backend)
        try await home.with { library in
            for (offset, name) in ["2026-11-19", "2026-11-21", "2026-11-20"].enumerated() {
                let date = Self.start.addingTimeInterval(Double([0, 2, 1][offset]) * Self.day)
                let issue = try await library.addIssue(name: name, date: date)
                #expect(issue.name == name && issue.date == date)
            }
            #expect(try await library.issues().map(\.name) == ["2026-11-21", "2026-11-20", "2026-11-19"])
            let found = try #require(try await library.issue(named: "2026-11-20"))
            #expect(found.date == Self.start.addingTimeInterval(Self.day))
            #expect(found.contentURL.lastPathComponent == "2026-11-20")
            #expect(try await library.issue(named: "2026-11-22") == nil)
        }
    }

    @Test(arguments: Backends.all)
    func aTakenOrUnusableIssueNameIsRefusedWithItsCode(backend: any BackendFactory) async throws {
        let home = BehaviourHome(backend)
        try await home.with { library in
            try await library.addIssue(name: "2026-11-21", date: Self.start)
            let duplicate = await #expect(throws: LibraryError.self) { try await library.addIssue(name: "2026-11-21", date: Self.start) }
            #expect(duplicate?.code == .duplicateIssue)
            for name in ["", "../up", ".hidden", "a/b"] {
                let refused = await #expect(throws: LibraryError.self) { try await library.addIssue(name: name, date: Self.start) }
                #expect(refused?.code == .invalidIssueName, "\(name.debugDescription): \(String(describing: refused))")
            }
            #expect(try await library.issues().map(\.name) == ["2026-11-21"])
        }
    }

    /// Assets keep the order they were added in, their request, and are found by identifier.
    /// A status tells the request back as the backend shows it: in process whole; through a
    /// daemon without its headers and the URL's user, which may hold a secret.
    @Test(arguments: Backends.all)
    func assetsKeepTheirOrderAndRequestAndAreFoundByIdentifier(backend: any BackendFactory) async throws {
        let home = BehaviourHome(backend)
        try await home.with { library in
            let issue = try await library.addIssue(name: "i", date: Self.start)
            let requests = (0..<3).map { index in
                AssetRequest(url: URL(string: "mem://reader@example/\(index).bin")!, headers: ["X-Index": "\(index)"],
                             sha256: String(repeating: "\(index)", count: 64), priority: index, destinationPath: "files/\(index).bin")
            }
            var added: [AssetDownload] = []
            for request in requests { added.append(try await issue.addAsset(request, userInfo: ["n": 1])) }
            #expect(try await issue.assets() == added)
            for (asset, request) in zip(added, requests) {
                #expect(asset.issueName == "i")
                let status = try await asset.status()
                #expect(status.request == backend.shown(request) && status.state == .idle && status.identifier == asset.identifier,
                        "\(status.request)")
                let told = backend.shown(request)
                #expect(told.sha256 == request.sha256 && told.priority == request.priority
                        && told.destinationPath == request.destinationPath, "only secrets are left out")
                #expect(try await library.asset(identifier: asset.identifier) == asset)
            }
            #expect(try await library.asset(identifier: "no-such-asset") == nil)
            #expect(try await issue.status() == .notDownloaded)
        }
    }

    @Test(arguments: Backends.all)
    func aRequestLeavingTheIssueFolderOrTooMuchUserInfoIsRefused(backend: any BackendFactory) async throws {
        let home = BehaviourHome(backend)
        try await home.with { library in
            let issue = try await library.addIssue(name: "i", date: Self.start)
            let url = home.memory.serve(Data("x".utf8), at: "x.bin")
            let escaping = await #expect(throws: LibraryError.self) { try await issue.addAsset(AssetRequest(url: url, destinationPath: "../../escape")) }
            #expect(escaping?.code == .invalidPath)
            let big = JSONValue.string(String(repeating: "x", count: 70 * 1024))
            let tooLarge = await #expect(throws: LibraryError.self) { try await issue.addAsset(AssetRequest(url: url), userInfo: big) }
            #expect(tooLarge?.code == .userInfoTooLarge)
            let badChecksum = await #expect(throws: LibraryError.self) { try await issue.addAsset(AssetRequest(url: url, sha256: "abc")) }
            #expect(badChecksum?.code == .invalidRequest)
            #expect(try await issue.assets().isEmpty, "nothing refused was added")
        }
    }

    @Test(arguments: Backends.all)
    func anAvailableIssueIsNewUntilMarkedRead(backend: any BackendFactory) async throws {
        let home = BehaviourHome(backend)
        try await home.with { library in
            let issue = try await library.addIssue(name: "i", date: Self.start)
            #expect(try await !issue.isNew(), "an issue not yet available is not new")
            #expect(try await library.badgeCount() == 0)
            try await issue.addAsset(AssetRequest(url: home.memory.serve(Data("pdf".utf8), at: "a.pdf"), destinationPath: "a.pdf"))
                .download()
            #expect(try await issue.waitUntilAvailable() == .available)
            #expect(try await issue.isNew())
            #expect(try await library.badgeCount() == 1)
            try await issue.markRead()
            #expect(try await !issue.isNew())
            #expect(try await library.badgeCount() == 0)
            #expect(try await issue.status() == .available, "read, still available")
        }
    }

    /// While an asset is on its way the issue is downloading, and not new.
    @Test(arguments: Backends.all)
    func anIssueOnItsWayIsDownloadingAndNotNew(backend: any BackendFactory) async throws {
        let home = BehaviourHome(backend)
        try await home.with { library in
            let issue = try await library.addIssue(name: "i", date: Self.start)
            let url = home.memory.serve(try await payload(256 * 1024), at: "s.bin", script: [.stallAfter(64 * 1024)])
            let asset = try await issue.addAsset(AssetRequest(url: url))
            try await asset.download()
            try await asset.waitForStatus("stalled") { $0.totalBytesWritten == 64 * 1024 }
            #expect(try await issue.status() == .downloading)
            #expect(try await !issue.isNew())
            #expect(try await library.badgeCount() == 0)
            #expect(try await library.downloadingAssets() == [asset])
            #expect(try await library.activity().downloading == 1)
        }
    }

    /// The issue being read is recorded, kept across a reopen, cleared, and never purged.
    @Test(arguments: Backends.all)
    func theIssueBeingReadIsKeptAcrossAReopenAndNeverPurged(backend: any BackendFactory) async throws {
        let home = BehaviourHome(backend)
        let first = try await home.open()
        var issues: [Paperboy.Issue] = []
        for day in 0..<3 {
            let issue = try await first.library.addIssue(name: "day-\(day)", date: Self.start.addingTimeInterval(Double(day) * Self.day))
            try await issue.addAsset(AssetRequest(url: home.memory.serve(Data("\(day)".utf8), at: "\(day).txt"), destinationPath: "\(day).txt"))
                .download()
            #expect(try await issue.waitUntilAvailable() == .available)
            issues.append(issue)
        }
        try await first.library.setCurrentlyReadingIssue(issues[0])
        #expect(try await first.library.currentlyReadingIssue() == issues[0])
        let second = try await first.reopen()
        let library = second.library
        #expect(try await library.currentlyReadingIssue()?.name == "day-0")
        #expect(try await library.purge(keep: 1) == ["day-1", "day-2"], "the oldest is being read: kept")
        #expect(try await library.issues().map(\.name) == ["day-0"])
        try await library.setCurrentlyReadingIssue(nil)
        #expect(try await library.currentlyReadingIssue() == nil)
        #expect(try await library.purge(keep: 0) == ["day-0"])
        await second.close()
    }

    /// Removing an issue cancels its downloads, deletes its content and forgets its assets.
    @Test(arguments: Backends.all)
    func removingAnIssueCancelsItsDownloadsAndRemovesItsContent(backend: any BackendFactory) async throws {
        let home = BehaviourHome(backend)
        try await home.with { library in
            let issue = try await library.addIssue(name: "gone", date: Self.start)
            let done = try await issue.addAsset(AssetRequest(url: home.memory.serve(Data("done".utf8), at: "done"), destinationPath: "done.txt"))
            try await done.download()
            #expect(try await done.waitUntilFinished() == .delivered)
            let url = home.memory.serve(try await payload(256 * 1024), at: "slow", script: [.stallAfter(64 * 1024)])
            let running = try await issue.addAsset(AssetRequest(url: url))
            let delegate = RecordingDelegate()
            try await running.download(delegate: delegate)
            try await running.waitForStatus("stalled") { $0.totalBytesWritten == 64 * 1024 }
            #expect(FileManager.default.fileExists(atPath: issue.contentURL.appendingPathComponent("done.txt").path))

            try await library.removeIssue(issue)
            #expect(try await running.waitUntilFinished() == .cancelled)
            #expect(try await library.issue(named: "gone") == nil)
            #expect(!FileManager.default.fileExists(atPath: issue.contentURL.path))
            #expect(try await library.downloadingAssets().isEmpty)
            let error = await #expect(throws: LibraryError.self) { try await running.status() }
            #expect(error?.code == .assetNotFound)
            #expect(try await library.asset(identifier: done.identifier) == nil)
            await delegate.waitForEnd()
            #expect(delegate.failures.map(\.reason) == [.cancelled], "\(delegate.events)")
        }
    }

    /// A corrected checksum: a failed asset downloads again under it with its next `download`.
    @Test(arguments: Backends.all)
    func aCorrectedChecksumLetsAFailedAssetDownloadAgain(backend: any BackendFactory) async throws {
        let home = BehaviourHome(backend)
        let data = try await payload(100_000)
        try await home.with { library in
            let wrong = String(repeating: "0", count: 64)
            let asset = try await library.addIssue(name: "i", date: Self.start)
                .addAsset(AssetRequest(url: home.memory.serve(data, at: "a.bin"), sha256: wrong, destinationPath: "a.bin"))
            try await asset.download()
            guard case .failed(let error) = try await asset.waitUntilFinished() else {
                Testing.Issue.record("not a failure")
                return
            }
            #expect(error.reason == .checksumMismatch)
            #expect(try await asset.status().totalBytesWritten == 0, "a mismatch keeps nothing")
            try await asset.updateExpectedSHA256(sha256Hex(data).uppercased())
            #expect(try await asset.status().request.sha256 == sha256Hex(data))
            try await asset.download()
            #expect(try await asset.waitUntilFinished() == .delivered)
        }
    }

    @Test(arguments: Backends.all)
    func aMalformedChecksumOrAnUnknownAssetIsRefused(backend: any BackendFactory) async throws {
        let home = BehaviourHome(backend)
        try await home.with { library in
            let issue = try await library.addIssue(name: "i", date: Self.start)
            let asset = try await issue.addAsset(AssetRequest(url: home.memory.serve(Data("x".utf8), at: "a.bin")))
            let malformed = await #expect(throws: LibraryError.self) { try await asset.updateExpectedSHA256("not-hex") }
            #expect(malformed?.code == .invalidRequest)
            #expect(try await asset.status().request.sha256 == nil, "nothing changed")
            try await library.removeIssue(issue)
            let unknown = await #expect(throws: LibraryError.self) { try await asset.updateExpectedSHA256(nil) }
            #expect(unknown?.code == .assetNotFound)
        }
    }

    /// A corrected checksum stops a running transfer, keeping its bytes, and starts it again
    /// under the new one.
    @Test(arguments: Backends.all)
    func aCorrectedChecksumAppliesToTheRunningTransfer(backend: any BackendFactory) async throws {
        let home = BehaviourHome(backend)
        let data = try await payload(256 * 1024)
        try await home.with { library in
            let url = home.memory.serve(data, at: "s.bin", script: [.stallAfter(64 * 1024)])
            let asset = try await library.addIssue(name: "i", date: Self.start)
                .addAsset(AssetRequest(url: url, sha256: String(repeating: "0", count: 64), destinationPath: "s.bin"))
            try await asset.download()
            try await asset.waitForStatus("stalled") { $0.totalBytesWritten == 64 * 1024 }
            try await asset.updateExpectedSHA256(sha256Hex(data))
            #expect(try await asset.waitUntilFinished() == .delivered)
            #expect(home.memory.jobs.map(\.offset) == [0, 64 * 1024])
        }
    }

    @Test(arguments: Backends.all)
    func countsAndActivityFollowTheAssets(backend: any BackendFactory) async throws {
        let home = BehaviourHome(backend)
        try await home.with { library in
            let issue = try await library.addIssue(name: "i", date: Self.start)
            let good = try await issue.addAsset(AssetRequest(url: home.memory.serve(try await payload(10_000), at: "a"), destinationPath: "a"))
            let missing = try await issue.addAsset(AssetRequest(url: URL(string: "mem://example/missing")!))
            try await issue.addAsset(AssetRequest(url: URL(string: "mem://example/later")!))
            try await good.download()
            try await missing.download()
            _ = try await good.waitUntilFinished()
            _ = try await missing.waitUntilFinished()
            let counts = try #require(try await library.counts()["i"])
            #expect(counts.delivered == 1 && counts.failed == 1 && counts.idle == 1, "\(counts)")
            let activity = try await library.activity()
            #expect(activity.failed == 1 && activity.downloading == 0 && activity.inInbox == 0, "\(activity)")
            // Bytes of assets not yet delivered only (the failed and the idle one have none): the
            // delivered asset's 10,000 are not work in progress, both ways.
            #expect(activity.bytesWritten == 0 && activity.expectedBytes == 0, "\(activity)")
        }
    }

    /// Handles of one asset (or issue) are equal and hash alike wherever they come from; those of
    /// another library are not, even with the same name.
    @Test(arguments: Backends.all)
    func handlesAreEqualWithinALibraryAndDistinctAcrossLibraries(backend: any BackendFactory) async throws {
        let home = BehaviourHome(backend)
        let other = BehaviourHome(backend)
        let second = try await other.open()
        try await home.with { library in
            let issue = try await library.addIssue(name: "same", date: Self.start)
            let asset = try await issue.addAsset(AssetRequest(url: home.memory.serve(try await payload(200_000), at: "a"), destinationPath: "a"))
            try await asset.download()
            let handles = [asset, try await library.asset(identifier: asset.identifier), try await issue.assets().first,
                           try await library.downloadingAssets().first].compactMap { $0 }
            #expect(handles.count >= 3 && Set(handles).count == 1, "\(handles)")
            let issues = [issue, try await library.issue(named: "same"), try await library.issues().first, try await asset.issue()].compactMap { $0 }
            #expect(issues.count == 4 && Set(issues).count == 1)
            let elsewhere = try await second.library.addIssue(name: "same", date: Self.start)
            #expect(elsewhere != issue)
            #expect(LibraryEvent.issueDownloadCompleted(elsewhere) != .issueDownloadCompleted(issue))
            #expect(try await asset.waitUntilFinished() == .delivered)
        }
        await second.close()
    }
}
