import Foundation
import Paperboy
import PaperboyClient
import PaperboyDaemon
import PaperboyTestServers
import PaperboyTesting
import Testing

/// The same failure is the same `LibraryError` through `Library.connect` as in the daemon's
/// library: waited for before or after it happened, in a status, a listing, an event and a
/// delegate's call; a download cancelled while it runs is told as `cancelled`.
@Suite("Failures through the daemon", .timeLimit(.minutes(2)))
struct ClientFailureTests {
    let home = ClientHome()
    let date = Date(timeIntervalSince1970: 1_795_000_000)

    func expectSame(_ remote: LibraryError?, _ local: LibraryError, _ what: String) {
        #expect(remote?.code == local.code, "\(what)")
        #expect(remote?.reason == local.reason, "\(what)")
        #expect(remote?.transportCode == local.transportCode, "\(what)")
        #expect(remote?.message == local.message, "\(what)")
        #expect(remote?.isRetryable == local.isRetryable, "\(what)")
        #expect(remote == local, "\(what)")
    }

    @Test func eachFailureIsTheSameLibraryErrorThroughTheDaemon() async throws {
        try await home.withDaemon { library in
            let client = try await Library.connect(socket: home.socket)
            defer { client.disconnect() }
            let events = EventLog(try await client.events())
            let issue = try await client.addIssue(name: "i", date: date)
            for scripted in ScriptedFailure.all {
                let remote = try await issue.addAsset(scripted.request(on: home.transport))
                let local = try #require(await library.asset(identifier: remote.identifier))
                // Waited for through the daemon before it fails: told by the `state` event.
                async let waited = remote.waitUntilFinished()
                try await local.download()
                guard case .failed(let inProcess) = try await local.waitUntilFinished() else {
                    Issue.record("\(scripted) should fail")
                    continue
                }
                #expect(scripted.matches(inProcess), "\(scripted): \(inProcess.code) \(inProcess.reason)")
                guard case .failed(let before) = try await waited else {
                    Issue.record("\(scripted) should fail through the daemon")
                    continue
                }
                expectSame(before, inProcess, "\(scripted), waited for before")
                // And after: from the status.
                guard case .failed(let after) = try await remote.waitUntilFinished() else {
                    Issue.record("\(scripted) should stay failed")
                    continue
                }
                expectSame(after, inProcess, "\(scripted), waited for after")
                expectSame(try await remote.status().failure, inProcess, "\(scripted), status")
                expectSame(try await issue.assets().first { $0.identifier == remote.identifier }?.status?.failure, inProcess,
                           "\(scripted), listing")
                try await eventually("the failed state of \(scripted)", seen: "\(events.all)") {
                    events.all.contains(.assetStateChanged(remote, .failed(inProcess.message)))
                }
                // The synchronous read: what the daemon last reported, the same error.
                expectSame(remote.status?.failure, inProcess, "\(scripted), last reported")
            }
        }
    }

    @Test func aClaimedFailureReachesTheDelegateAsInProcess() async throws {
        try await home.withDaemon { library in
            let client = try await Library.connect(socket: home.socket)
            defer { client.disconnect() }
            let issue = try await client.addIssue(name: "i", date: date)
            let scripted = try #require(ScriptedFailure.all.first { $0.reason == .authentication })
            let remote = try await issue.addAsset(scripted.request(on: home.transport))
            let delegate = InboxReader()
            try await remote.download(delegate: delegate)
            guard case .failed(let inProcess) = try await #require(library.asset(identifier: remote.identifier)).waitUntilFinished() else {
                Issue.record("\(scripted) should fail")
                return
            }
            try await eventually("the delegate's failure", seen: "\(delegate.failures)") { !delegate.failures.isEmpty }
            expectSame(delegate.failures.first, inProcess, "the delegate's")
        }
    }

    @Test func aDownloadCancelledWhileItRunsIsToldAsCancelled() async throws {
        try await home.withDaemon { library in
            let client = try await Library.connect(socket: home.socket)
            defer { client.disconnect() }
            let events = EventLog(try await client.events())
            let issue = try await client.addIssue(name: "i", date: date)
            let url = home.transport.serve(randomData(256 * 1024), at: "slow.bin", script: [.stallAfter(64 * 1024)])
            let remote = try await issue.addAsset(AssetRequest(url: url, destinationPath: "slow.bin"))
            let delegate = InboxReader()
            try await remote.download(delegate: delegate)
            let local = try #require(await library.asset(identifier: remote.identifier))
            try await eventually("the transfer to stall", seen: "\(local.totalBytesWritten)") { local.totalBytesWritten >= 64 * 1024 }
            try await remote.cancel()
            let outcome = try await remote.waitUntilFinished()
            #expect(outcome == .cancelled, "\(outcome)")
            try await eventually("the cancelled state and the delegate's failure", seen: "\(events.all) \(delegate.failures)") {
                events.states(of: remote).contains(.cancelled) && !delegate.failures.isEmpty
            }
            expectSame(delegate.failures.first, LibraryError.cancelled(asset: remote.identifier), "the delegate's")
            #expect(delegate.failures.first?.reason == .cancelled)
            #expect(remote.state == .cancelled, "the synchronous read follows the event")
        }
    }
}

