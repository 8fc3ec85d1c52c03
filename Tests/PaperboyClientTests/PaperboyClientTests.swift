import Foundation
import Paperboy
import PaperboyClient
import PaperboyDaemon
import PaperboyFraming
import PaperboyTestServers
import PaperboyTesting
import Testing

/// `Library.connect` against the daemon's server in process (docs/Daemon.md "Moving an app to the
/// daemon"): connecting, issues and assets, events, a delivery handed to a delegate and
/// acknowledged, a file kept for the next connection, and what disconnecting ends.
@Suite("Library.connect against an in-process daemon", .timeLimit(.minutes(2)))
struct PaperboyClientTests {
    let home = ClientHome()
    let date = Date(timeIntervalSince1970: 1_795_000_000)

    @Test func connectingGivesTheLibraryAndItsIssuesAndAssets() async throws {
        try await home.withDaemon { library in
            let client = try await Library.connect(socket: home.socket, name: "client test")
            defer { client.disconnect() }
            #expect(client.root.path == library.root.path)
            #expect(try await client.issues().isEmpty)
            #expect(try await client.badgeCount() == 0)

            let issue = try await client.addIssue(name: "2026-11-21", date: date)
            #expect(issue.name == "2026-11-21")
            #expect(issue.date == date)
            #expect(try await issue.status() == .notDownloaded)
            #expect(try await issue.contentURL.path == library.issue(named: "2026-11-21")?.contentURL.path)
            let duplicate = await #expect(throws: LibraryError.self) { try await client.addIssue(name: "2026-11-21", date: date) }
            #expect(duplicate?.code == .duplicateIssue)
            #expect(try await client.issue(named: "2026-11-21")?.name == "2026-11-21")
            #expect(try await client.issue(named: "nope") == nil)
            #expect(try await client.asset(identifier: "nope") == nil)

            let url = home.transport.serve(Data("x".utf8), at: "a.bin")
            let asset = try await issue.addAsset(AssetRequest(url: url, destinationPath: "a.bin"), userInfo: .object(["n": .number(1)]))
            #expect(asset.issueName == "2026-11-21")
            #expect(asset.state == .idle)
            #expect(try await asset.status().state == .idle)
            #expect(asset.request?.url == url)
            #expect(asset.userInfo == .object(["n": .number(1)]))
            #expect(try await issue.assets().map(\.identifier) == [asset.identifier])
            #expect(try await client.asset(identifier: asset.identifier)?.identifier == asset.identifier)
            let escaping = await #expect(throws: LibraryError.self) {
                try await issue.addAsset(AssetRequest(url: url, destinationPath: "../../escape"))
            }
            #expect(escaping?.code == .invalidPath)
        }
    }

    @Test func aDownloadWithADelegateIsHandedToItThenAcknowledgedAndDelivered() async throws {
        let data = try await generated(250_000, seed: 21)
        try await home.withDaemon { library in
            let client = try await Library.connect(socket: home.socket)
            defer { client.disconnect() }
            let events = EventLog(try await client.events())
            let issue = try await client.addIssue(name: "2026-11-21", date: date)
            let asset = try await issue.addAsset(AssetRequest(url: home.transport.serve(data, at: "b.bin"), destinationPath: "files/b.bin"))
            let delegate = InboxReader()
            try await asset.download(delegate: delegate)
            #expect(try await asset.waitUntilFinished() == .delivered)
            let handed = delegate.finished
            #expect(handed.map(\.asset) == [asset.identifier])
            #expect(handed.first?.data == data, "the delegate read the whole file in the daemon's inbox")
            #expect(delegate.failures.isEmpty)
            #expect(asset.state == .delivered, "the synchronous read follows the events")
            let destination = try #require(await library.issue(named: "2026-11-21")).contentURL.appendingPathComponent("files/b.bin")
            #expect(FileManager.default.contents(atPath: destination.path) == data)

            try await eventually("the issue's completion event", seen: "\(events.all)") {
                events.all.contains(.issueDownloadCompleted(issue))
            }
            let seen = events.all
            let order: [LibraryEvent] = [.assetStateChanged(asset, .downloading), .assetStateChanged(asset, .finished),
                                         .assetStateChanged(asset, .delivered), .issueDownloadCompleted(issue)]
            #expect(order.allSatisfy(seen.contains), "\(seen)")
            #expect(order.compactMap { seen.firstIndex(of: $0) } == order.compactMap { seen.firstIndex(of: $0) }.sorted(), "\(seen)")
            guard case .issueDownloadCompleted(let completed)? = seen.first(where: { if case .issueDownloadCompleted = $0 { true } else { false } }) else { return }
            #expect(completed.contentURL == issue.contentURL && completed.date == date, "the event's issue is a whole handle")
            #expect(try await client.badgeCount() == 1)
            try await eventually("the badge as last reported", seen: "\(client.badgeCount)") { client.badgeCount == 1 }
        }
    }

    /// The client's synchronous reads follow the events that came before an answer, even while
    /// the events' delivery to delegates waits: here on a delegate still taking another asset's
    /// file (the soak saw `asset.state` read `finished` after `waitUntilFinished()` answered
    /// `delivered`: the mirror then applied events on the dispatching task, behind the delegate).
    @Test func aSynchronousReadAfterAnAnswerSeesTheEventsBeforeItWhileADelegateHoldsTheOthers() async throws {
        let held = try await generated(40_000, seed: 23)
        let data = try await generated(2_000_000, seed: 24)
        try await home.withDaemon { _ in
            let client = try await Library.connect(socket: home.socket)
            defer { client.disconnect() }
            let issue = try await client.addIssue(name: "2026-11-21", date: date)
            let first = try await issue.addAsset(AssetRequest(url: home.transport.serve(held, at: "held.bin"), destinationPath: "held.bin"))
            let second = try await issue.addAsset(AssetRequest(url: home.transport.serve(data, at: "second.bin"), destinationPath: "second.bin"))
            let gate = Gate()
            try await first.download(delegate: HoldingReader(gate: gate))
            try await eventually("the delegate to hold the first file", seen: "\(gate.arrivals) arrival(s)") { gate.arrivals == 1 }
            try await second.download()
            #expect(try await second.waitUntilFinished() == .delivered)
            #expect(second.state == .delivered, "the events before the answer are in the mirror")
            #expect(second.totalBytesWritten == Int64(data.count))
            gate.open()
            #expect(try await first.waitUntilFinished() == .delivered)
            #expect(first.state == .delivered)
        }
    }

    /// A transfer nobody claimed that ends within the daemon's progress interval still tells
    /// its size: a client reads the delivered file's size, as in process (it read 0 before).
    @Test func aShortTransferNobodyClaimedCountsItsSizeOnceDelivered() async throws {
        let data = try await generated(2_000_000, seed: 24)
        try await home.withDaemon { _ in
            let client = try await Library.connect(socket: home.socket)
            defer { client.disconnect() }
            let issue = try await client.addIssue(name: "2026-11-21", date: date)
            let asset = try await issue.addAsset(AssetRequest(url: home.transport.serve(data, at: "short.bin"), destinationPath: "short.bin"))
            try await asset.download()
            #expect(try await asset.waitUntilFinished() == .delivered)
            try await eventually("the delivered size in the client", seen: "\(asset.totalBytesWritten) bytes") {
                asset.state == .delivered && asset.totalBytesWritten == Int64(data.count)
            }
        }
    }

    @Test func aDelegateThatThrowsKeepsTheFileForTheNextConnection() async throws {
        let data = try await generated(120_000, seed: 22)
        try await home.withDaemon { _ in
            let first = try await Library.connect(socket: home.socket)
            let issue = try await first.addIssue(name: "2026-11-21", date: date)
            let asset = try await issue.addAsset(AssetRequest(url: home.transport.serve(data, at: "c.bin"), destinationPath: "c.bin"))
            let refusing = InboxReader(refuses: true)
            try await asset.download(delegate: refusing)
            try await eventually("the refusing delegate to be handed the file", seen: "\(refusing.finished.count) call(s)") {
                !refusing.finished.isEmpty
            }
            await first.close()

            let second = try await Library.connect(socket: home.socket)
            defer { second.disconnect() }
            let waiting = try await second.downloadingAssets()
            #expect(waiting.map(\.identifier) == [asset.identifier])
            #expect(waiting.first?.state == .finished, "still in the inbox, not delivered")
            let taking = InboxReader()
            try await waiting[0].download(delegate: taking)
            #expect(try await waiting[0].waitUntilFinished() == .delivered)
            #expect(taking.finished.map(\.path) == refusing.finished.map(\.path), "the same file, at the same place")
            #expect(taking.finished.first?.data == data)
            #expect(try await second.downloadingAssets().isEmpty)
        }
    }

    @Test func disconnectingEndsARequestStillWaitingAndTheEvents() async throws {
        let gate = Gate()
        try await home.withDaemon(reload: {
            await gate.pass()
            return 0
        }) { _ in
            let client = try await Library.connect(socket: home.socket)
            let events = EventLog(try await client.events())
            let reload = Task { try await client.daemon?.reload() }
            try await eventually("the daemon to be reloading", seen: "\(gate.arrivals) arrival(s)") { gate.arrivals == 1 }
            client.disconnect()
            do {
                _ = try await reload.value
                Issue.record("RELOAD was answered after disconnect()")
            } catch let error as LibraryError {
                #expect(error.code == .transport)
                #expect(error.isRetryable)
                #expect(error.message == "the daemon at \(home.socket.path) closed the connection")
            }
            try await eventually("the event stream to end", seen: "\(events.all)") { events.hasEnded }
            let after = await #expect(throws: LibraryError.self) { try await client.issues() }
            #expect(after?.code == .transport)
            gate.open()
        }
    }

    @Test func theEventsEndWhenTheDaemonStops() async throws {
        let (client, events) = try await home.withDaemon { _ in
            let client = try await Library.connect(socket: home.socket)
            return (client, EventLog(try await client.events()))
        }
        defer { client.disconnect() }
        try await eventually("the event stream to end", seen: "\(events.all)") { events.hasEnded }
        let after = await #expect(throws: LibraryError.self) { try await client.badgeCount() }
        #expect(after?.code == .transport)
    }

    @Test func connectingWhereNoDaemonListensFailsAndMayBeRetried() async throws {
        do {
            _ = try await Library.connect(socket: home.socket)
            Issue.record("connected to nothing")
        } catch {
            #expect(error.code == .transport)
            #expect(error.isRetryable)
            #expect(error.message == "no daemon listens on \(home.socket.path) (start one with 'paperboy daemon')")
        }
    }

    @Test func aDaemonThatAnswersHelloWithAnErrorRefusesTheConnection() async throws {
        let fake = try FakeDaemon(in: home.folder.file("fake")) { connection in
            let refusal = Frame.encode("ERROR", Data(#"{"code":"permission-denied","message":"too many connections (at most 64)"}"#.utf8))
            try? FrameWriter.write(refusal, to: connection, isSocket: true)
        }
        do {
            _ = try await Library.connect(socket: fake.socket)
            Issue.record("connected to a daemon that refused")
        } catch {
            #expect(error.code == .transport)
            #expect(error.message == "the daemon at \(fake.socket.path) refused the connection: too many connections (at most 64)")
        }
        try await eventually("the client's HELLO read by the server") { fake.hello != nil }
        #expect(fake.hello?.kind == "HELLO")
    }
}
