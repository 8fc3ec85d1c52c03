import Foundation
import Testing
@testable import Paperboy
import PaperboyTestServers
import PaperboyTesting

@Suite("Delivery", .timeLimit(.minutes(2)))
struct DeliveryTests {
    let folder = TempFolder()
    var root: URL { folder.file("library") }

    func open(_ transport: any Transport, _ configuration: Library.Configuration = Library.Configuration.forTests()) throws -> Library {
        try Library.open(at: root, transports: TransportRegistry([transport]), configuration: configuration)
    }

    @Test func aCorrectedChecksumAppliesToTheRunningTransfer() async throws {
        let data = randomData(2 << 20)
        let transport = InMemoryTransport(chunkSize: 64 * 1024)
        let url = transport.serve(data, at: "big.pdf")
        // Held after its first 64 KiB until the checksum is corrected: it cannot end first.
        let held = HoldingTransport(base: transport, holdingAfter: 64 * 1024)
        let library = try open(held)
        let issue = try await library.addIssue(name: "i", date: Date())
        let asset = try await issue.addAsset(AssetRequest(url: url, sha256: String(repeating: "0", count: 64), destinationPath: "big.pdf"))
        for bad in ["abc", String(repeating: "g", count: 64)] {
            await #expect(throws: LibraryError.self, "\(bad)") { try await asset.updateExpectedSHA256(bad) }
        }
        try await asset.download()
        try await eventually("the transfer held after 64 KiB", seen: "\(held.bytesTaken) bytes, state \(asset.state)") { held.isHolding }
        try await asset.updateExpectedSHA256(sha256Hex(data).uppercased())
        #expect(asset.request?.sha256 == sha256Hex(data))
        held.release()
        await library.waitUntilIdle()
        #expect(asset.state == .delivered, "\(asset.state)")
        #expect(try Bytes(Data(contentsOf: issue.contentURL.appendingPathComponent("big.pdf"))) == Bytes(data))
        // Delivered: a new checksum changes nothing.
        try await asset.updateExpectedSHA256(nil)
        #expect(asset.state == .delivered)
        await library.close()
        // The corrected request was stored.
        let reopened = try open(transport)
        #expect(try await reopened.issue(named: "i")?.assets.first?.request?.sha256 == sha256Hex(data))
        await reopened.close()
    }

    @Test func callbackTrioIsOrderedAndCoalesced() async throws {
        let data = randomData(4 << 20)
        let transport = InMemoryTransport(chunkSize: 64 * 1024)
        let url = transport.serve(data, at: "big.pdf")
        // The library's clock stands still, whatever the machine's pace: no 20 ms interval ends
        // between two chunks (CallbackBehaviourTests moves the clock between them).
        let library = try open(transport, .forTests(clock: TestClock()))
        let issue = try await library.addIssue(name: "i", date: Date())
        let asset = try await issue.addAsset(AssetRequest(url: url))
        let delegate = RecordingDelegate()
        try await asset.download(delegate: delegate)
        await delegate.waitForEnd()

        let events = delegate.events
        let progress = events.compactMap { event -> (Int64, Int64, Int64?)? in
            if case .progress(let written, let total, let expected) = event { return (written, total, expected) }
            return nil
        }
        // 64 chunks arrive; progress is coalesced to the 20 ms interval, with a final event.
        #expect(progress.count >= 1)
        #expect(progress.count < 64, "\(progress.count) progress events for 64 chunks")
        #expect(progress.map(\.0).reduce(0, +) == Int64(data.count))
        #expect(progress.last?.1 == Int64(data.count))
        #expect(progress.allSatisfy { $0.2 == Int64(data.count) })
        #expect(zip(progress, progress.dropFirst()).allSatisfy { $0.1 < $1.1 })
        guard case .finished(let path, let existed) = events.last else {
            Testing.Issue.record("last event is \(String(describing: events.last))")
            return
        }
        #expect(existed)
        #expect(path.hasSuffix(".pdf"))
        #expect(!events.contains { if case .resumed = $0 { return true } else { return false } })
        // The temporary file lives only for the duration of the call.
        try await eventually("delivered") { asset.state == .delivered }
        #expect(!FileManager.default.fileExists(atPath: path))
        #expect(delegate.keptFiles == [data])
        await library.close()
    }

    @Test func destinationPathDeliveryCompletesTheIssue() async throws {
        let transport = InMemoryTransport()
        let pdf = randomData(300_000, seed: 1)
        let cover = randomData(1_000, seed: 2)
        let pdfURL = transport.serve(pdf, at: "mag.pdf")
        let coverURL = transport.serve(cover, at: "cover.png")
        let library = try open(transport)
        let events = try await library.events()
        let issue = try await library.addIssue(name: "2026-11-21", date: Date())
        let assets = try await issue.addAssets([
            (AssetRequest(url: pdfURL, sha256: sha256Hex(pdf), destinationPath: "magazine.pdf"), nil),
            (AssetRequest(url: coverURL, destinationPath: "art/cover.png"), nil),
        ])
        #expect(issue.status == .notDownloaded)
        for asset in assets { try await asset.download() }
        #expect(issue.status == .downloading)
        await library.waitUntilIdle()

        #expect(try Bytes(Data(contentsOf: issue.contentURL.appendingPathComponent("magazine.pdf"))) == Bytes(pdf))
        #expect(try Bytes(Data(contentsOf: issue.contentURL.appendingPathComponent("art/cover.png"))) == Bytes(cover))
        #expect(issue.status == .available)
        #expect(issue.isNew)
        #expect(library.badgeCount == 1)
        #expect(library.downloadingAssets.isEmpty)
        var completed: String?
        for await event in events {
            if case .issueDownloadCompleted(let done) = event {
                completed = done.name
                break
            }
        }
        #expect(completed == "2026-11-21")
        try await issue.markRead()
        #expect(library.badgeCount == 0)
        await library.close()
    }

    /// A filtered subscription receives only what its filter accepts, and every such event: the
    /// others are never queued for it (an unfiltered one sees them).
    @Test func aFilteredSubscriptionReceivesOnlyTheEventsItWants() async throws {
        let transport = InMemoryTransport()
        let library = try open(transport)
        let wanted = try await library.events { event in
            if case .assetStateChanged(let asset, .delivered) = event { asset.issueName == "a" } else { false }
        }
        let all = try await library.events()
        for name in ["a", "b"] {
            let issue = try await library.addIssue(name: name, date: Date())
            let requests = (0..<3).map { index in
                (AssetRequest(url: transport.serve(randomData(1_000, seed: UInt64(index)), at: "\(name)\(index)"), destinationPath: "f\(index)"),
                 JSONValue?.none)
            }
            for asset in try await issue.addAssets(requests) { try await asset.download() }
        }
        await library.waitUntilIdle()
        await library.close()
        var received: [LibraryEvent] = []
        for await event in wanted { received.append(event) }
        var others = 0
        for await event in all {
            if case .assetStateChanged(let asset, .delivered) = event, asset.issueName == "a" { continue }
            others += 1
        }
        #expect(received.count == 3)
        for event in received {
            guard case .assetStateChanged(let asset, .delivered) = event else {
                Issue.record("unwanted event \(event)")
                continue
            }
            #expect(asset.issueName == "a")
        }
        #expect(others >= 6, "the unfiltered stream sees issue b's deliveries and the completions")
    }

    @Test func checksumMismatchKeepsNothing() async throws {
        let transport = InMemoryTransport()
        let url = transport.serve(randomData(100_000), at: "bad")
        let library = try open(transport)
        let issue = try await library.addIssue(name: "i", date: Date())
        let asset = try await issue.addAsset(AssetRequest(url: url, sha256: String(repeating: "ab", count: 32), destinationPath: "bad.bin"))
        let delegate = RecordingDelegate()
        try await asset.download(delegate: delegate)
        await delegate.waitForEnd()
        guard case .failed(let code, let message) = delegate.events.last else {
            Testing.Issue.record("expected a failure, got \(delegate.events)")
            return
        }
        #expect(code == "checksum-mismatch")
        #expect(message.contains("expected abab"))
        #expect(transport.jobs.count == 1)
        if case .failed = asset.state {} else { Testing.Issue.record("state \(asset.state)") }
        #expect(!FileManager.default.fileExists(atPath: issue.contentURL.appendingPathComponent("bad.bin").path))
        for sub in [".partial", ".inbox"] {
            let folder = root.appendingPathComponent(sub)
            let sizes = try FileManager.default.contentsOfDirectory(atPath: folder.path).map {
                try FileManager.default.attributesOfItem(atPath: folder.appendingPathComponent($0).path)[.size] as? Int ?? 0
            }
            #expect(sizes.allSatisfy { $0 == 0 }, "\(sub) keeps bytes")
        }
        await library.close()
    }

    @Test func unsupportedSchemeNamesTheSchemeAndTheRegisteredOnes() async throws {
        let transport = InMemoryTransport()
        let library = try open(transport)
        let issue = try await library.addIssue(name: "i", date: Date())
        let asset = try await issue.addAsset(AssetRequest(url: URL(string: "gopher://host/file")!))
        let delegate = RecordingDelegate()
        try await asset.download(delegate: delegate)
        await delegate.waitForEnd()
        guard case .failed(let code, let message) = delegate.events.last else {
            Testing.Issue.record("expected a failure")
            return
        }
        #expect(code == "transport")
        #expect(message.contains("'gopher'"))
        #expect(message.contains("registered: mem"))
        await library.close()
    }

    @Test func redeliveredAfterACrashDuringDidFinish() async throws {
        let data = randomData(50_000)
        let transport = InMemoryTransport()
        let url = transport.serve(data, at: "crash.bin")
        let first = try open(transport)
        let issue = try await first.addIssue(name: "i", date: Date())
        let asset = try await issue.addAsset(AssetRequest(url: url))
        let hanging = RecordingDelegate(finish: .hang)
        try await asset.download(delegate: hanging)
        await hanging.waitForEnd()
        // The app dies inside didFinish: nothing was recorded as delivered.
        await first.close()

        let second = try open(transport)
        let pending = second.downloadingAssets
        #expect(pending.map(\.identifier) == [asset.identifier])
        #expect(pending.first?.state == .finished)
        let delegate = RecordingDelegate()
        try await pending.first?.download(delegate: delegate)
        await delegate.waitForEnd()
        #expect(delegate.keptFiles == [data])
        try await eventually("delivered") { try await second.asset(identifier: asset.identifier)?.state == .delivered }
        #expect(transport.jobs.count == 1)
        await second.close()
    }

    @Test func throwingDidFinishKeepsTheFileInTheInbox() async throws {
        let transport = InMemoryTransport()
        let url = transport.serve(Data("keep me".utf8), at: "k.txt")
        let library = try open(transport)
        let asset = try await library.addIssue(name: "i", date: Date()).addAsset(AssetRequest(url: url))
        let refusing = RecordingDelegate(finish: .throwError)
        try await asset.download(delegate: refusing)
        await refusing.waitForEnd()
        await library.waitUntilIdle()
        #expect(asset.state == .finished)
        let target = folder.file("moved.txt")
        let taking = RecordingDelegate(finish: .move(to: target))
        try await asset.download(delegate: taking)
        await taking.waitForEnd()
        try await eventually("delivered") { asset.state == .delivered }
        #expect(try String(contentsOf: target, encoding: .utf8) == "keep me")
        await library.close()
    }

    @Test func eventsSequenceHoldsTheFileUntilTheNextElement() async throws {
        let data = randomData(200_000)
        let transport = InMemoryTransport()
        let url = transport.serve(data, at: "seq.bin")
        let library = try open(transport)
        let asset = try await library.addIssue(name: "i", date: Date()).addAsset(AssetRequest(url: url))
        var finishedURL: URL?
        var sawProgress = false
        var iterator = try await asset.events().makeAsyncIterator()
        while let event = await iterator.next() {
            switch event {
            case .progress: sawProgress = true
            case .finished(let location):
                finishedURL = location
                #expect(try Bytes(Data(contentsOf: location)) == Bytes(data))
            case .failed(let error): Testing.Issue.record("failed: \(error)")
            case .resumed: Testing.Issue.record("unexpected resume")
            }
        }
        #expect(sawProgress)
        let location = try #require(finishedURL)
        try await eventually("file released") { !FileManager.default.fileExists(atPath: location.path) }
        try await eventually("delivered") { asset.state == .delivered }
        await library.close()
    }

    @Test func deliveryRefusesASymlinkOutOfTheIssueFolder() async throws {
        let transport = InMemoryTransport()
        let url = transport.serve(Data("payload".utf8), at: "p")
        let library = try open(transport)
        let issue = try await library.addIssue(name: "i", date: Date())
        let outside = folder.file("outside")
        try FileManager.default.createDirectory(at: outside, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: issue.contentURL, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(at: issue.contentURL.appendingPathComponent("link"), withDestinationURL: outside)
        let asset = try await issue.addAsset(AssetRequest(url: url, destinationPath: "link/file.txt"))
        try await asset.download()
        await library.waitUntilIdle()
        guard case .failed(let message) = asset.state else {
            Testing.Issue.record("expected failure, got \(asset.state)")
            return
        }
        #expect(message.contains("outside the issue folder"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: outside.path).isEmpty)
        await library.close()
    }

    /// Delivers a file to `folder/a`, lets `change` alter the issue folder, then delivers
    /// another file to `folder/b` in the same run: the second asset, once idle.
    func deliverAgain(into folder: String, after change: (Paperboy.Issue) throws -> Void) async throws -> (Library, Paperboy.Issue, AssetDownload) {
        let transport = InMemoryTransport()
        let library = try open(transport)
        let issue = try await library.addIssue(name: "i", date: Date())
        let first = try await issue.addAsset(AssetRequest(url: transport.serve(Data("a".utf8), at: "a"), destinationPath: "\(folder)/a"))
        try await first.download()
        await library.waitUntilIdle()
        #expect(first.state == .delivered)
        try change(issue)
        let second = try await issue.addAsset(AssetRequest(url: transport.serve(Data("b".utf8), at: "b"), destinationPath: "\(folder)/b"))
        try await second.download()
        await library.waitUntilIdle()
        return (library, issue, second)
    }

    @Test func aLinkPlantedAfterAFirstDeliveryIsNotWrittenThrough() async throws {
        // The first delivery creates `pages`; replaced by a link afterwards (as an archive
        // unpacked in the same run could), it must not lead the second delivery outside.
        let outside = folder.file("outside")
        try FileManager.default.createDirectory(at: outside, withIntermediateDirectories: true)
        let (library, _, second) = try await deliverAgain(into: "pages") { issue in
            try FileManager.default.removeItem(at: issue.contentURL.appendingPathComponent("pages"))
            try FileManager.default.createSymbolicLink(at: issue.contentURL.appendingPathComponent("pages"), withDestinationURL: outside)
        }
        guard case .failed(let message) = second.state else {
            Testing.Issue.record("expected failure, got \(second.state)")
            return
        }
        #expect(message.contains("goes through 'pages', a symbolic link"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: outside.path).isEmpty)
        await library.close()
    }

    @Test func aFolderRemovedBehindTheLibrarysBackIsCreatedAgain() async throws {
        let (library, issue, second) = try await deliverAgain(into: "sub") { issue in
            try FileManager.default.removeItem(at: issue.contentURL)   // by hand, or a purge racing a transfer
        }
        #expect(second.state == .delivered)
        #expect(try Bytes(Data(contentsOf: issue.contentURL.appendingPathComponent("sub/b"))) == Bytes(Data("b".utf8)))
        await library.close()
    }

    @Test func aDelegateStillGetsTheFinishedFileOfAnAssetWithADestination() async throws {
        let data = randomData(100_000)
        let transport = InMemoryTransport()
        let url = transport.serve(data, at: "page.pdf")
        let library = try open(transport)
        let issue = try await library.addIssue(name: "i", date: Date())
        let asset = try await issue.addAsset(AssetRequest(url: url, destinationPath: "pages/page.pdf"))
        let delegate = RecordingDelegate()
        try await asset.download(delegate: delegate)
        await delegate.waitForEnd()
        await library.waitUntilIdle()
        let finished = delegate.events.compactMap { event -> String? in
            if case .finished(let path, _) = event { return path }
            return nil
        }
        #expect(finished.count == 1)
        #expect(finished.first?.contains("/.inbox/") == true)
        #expect(delegate.keptFiles == [data])
        #expect(try Bytes(Data(contentsOf: issue.contentURL.appendingPathComponent("pages/page.pdf"))) == Bytes(data))
        #expect(asset.state == .delivered)
        await library.close()
    }

    @Test(arguments: [false, true])
    func aFolderAtTheDestinationIsAClearFailure(folderHasContent: Bool) async throws {
        let transport = InMemoryTransport()
        let url = transport.serve(Data("payload".utf8), at: "p")
        let library = try open(transport)
        let issue = try await library.addIssue(name: "i", date: Date())
        let occupied = issue.contentURL.appendingPathComponent("pages/one")
        try FileManager.default.createDirectory(at: occupied, withIntermediateDirectories: true)
        if folderHasContent { try Data("kept".utf8).write(to: occupied.appendingPathComponent("inside")) }
        let asset = try await issue.addAsset(AssetRequest(url: url, destinationPath: "pages/one"))
        try await asset.download()
        await library.waitUntilIdle()
        guard case .failed(let message) = asset.state else {
            Testing.Issue.record("expected failure, got \(asset.state)")
            return
        }
        #expect(message == "destination 'pages/one' of issue 'i' is a folder")
        #expect(try FileManager.default.contentsOfDirectory(atPath: occupied.path) == (folderHasContent ? ["inside"] : []))
        await library.close()
    }

    @Test(arguments: [
        ("https://h/a/issue.pdf", "id.pdf"),
        ("https://h/a/archive.tar.gz?x=1#y", "id.gz"),
        ("https://h/a/.profile", "id"),
        ("https://h/a/..pdf", "id"),
        ("https://h/a/.x.pdf", "id.pdf"),
        ("https://h/a/a..pdf", "id.pdf"),
        ("https://h/a/noextension", "id"),
        ("https://h/a/trailing.", "id"),
        ("https://h/a/dir/", "id"),
        ("https://h/a/name.%20sp", "id"),
        ("https://h/a/name.abcdefghijklmnopq", "id"),
        ("https://h/a/name.abcdefghijklmnop", "id.abcdefghijklmnop"),
        ("file:///tmp/x.v2/plain", "id"),
    ])
    func inboxNameKeepsOnlyAShortAlphanumericExtension(source: String, expected: String) throws {
        let url = try #require(URL(string: source))
        #expect(LibraryLayout.inboxName(id: "id", source: url) == expected)
        // The same names as Foundation's pathExtension gave the libraries of earlier versions.
        let ext = url.pathExtension
        let safe = !ext.isEmpty && ext.count <= 16 && ext.allSatisfy { $0.isLetter || $0.isNumber }
        #expect(LibraryLayout.inboxName(id: "id", source: url) == (safe ? "id.\(ext)" : "id"))
    }
}
