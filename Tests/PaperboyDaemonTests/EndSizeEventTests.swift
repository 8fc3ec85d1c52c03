import Foundation
import Paperboy
@testable import PaperboyDaemon
import PaperboyTestServers
import PaperboyTesting
import Testing

/// docs/Daemon.md, `progress`: a transfer nobody claimed tells its whole size just before the
/// first state that ends it (`finished`, or `delivered` when it goes straight to its issue); that
/// it does so once is ``EndSizesTests``'.
@Suite("A transfer's size at its end, through a daemon", .timeLimit(.minutes(2)))
struct EndSizeEventTests {
    let home = DaemonHome()

    /// The events about `id` up to the state `last`, in order, each as `progress TOTAL` (with
    /// `bytes_written` 0: the size at the end, or the ticker's first look at a transfer) or
    /// `state NAME`.
    func events(of id: String, until last: String, on client: WireClient) async throws -> [String] {
        var seen: [String] = []
        while seen.last != last {
            let event = try await client.event("the delivery of \(id), after \(seen)") { $0["asset"] as? String == id }
            switch event["event"] as? String {
            case "progress" where event["bytes_written"] as? Int == 0:
                seen.append("progress \(event["total_bytes_written"] as? Int ?? -1)")
            case "state":
                seen.append("state \((event["state"] as? JSON)?["name"] as? String ?? "?")")
            default:
                continue
            }
        }
        return seen
    }

    @Test func theSizeComesOnceBeforeTheFirstStateThatEndsTheTransfer() async throws {
        try await home.withDaemon { daemon in
            let client = try await WireClient.negotiated(home.socket)
            #expect(try await client.request("SUBSCRIBE", #"{"id":1}"#).kind == "OK")
            let issue = try await daemon.library.addIssue(name: "i", date: Date())
            // With a path in its issue: delivered there, its size told once, before the first
            // state that ends the transfer.
            let delivered = try await issue.addAsset(AssetRequest(url: home.transport.serve(randomData(2_000), at: "b.bin"), destinationPath: "b.bin"))
            try await delivered.download()
            let told = try await events(of: delivered.identifier, until: "state delivered", on: client)
            // (The daemon's ticker may also have told bytes while the transfer ran, before its end.)
            let end = try #require(told.firstIndex { $0 == "state finished" || $0 == "state delivered" }, "\(told)")
            #expect(end > 0 && told[end - 1] == "progress 2000", "\(told)")

            // Without a path: it waits in the inbox, `finished`, its size told before that.
            let waiting = try await issue.addAsset(AssetRequest(url: home.transport.serve(randomData(3_000), at: "a.bin")))
            try await waiting.download()
            let inbox = try await events(of: waiting.identifier, until: "state finished", on: client)
            #expect(inbox.suffix(2) == ["progress 3000", "state finished"], "\(inbox)")
        }
    }
}

/// The rule itself, over sequences of states (the wire test above cannot tell the daemon's
/// ticker's first look at a transfer from a size told twice).
@Suite("Which end of a transfer tells its size")
struct EndSizesTests {
    /// Runs `states` of asset `a` through the rule, telling the size whenever it says so; the
    /// states the size went out with.
    func told(_ states: [AssetState]) -> [AssetState] {
        var sizes = EndSizes()
        var told: [AssetState] = []
        for state in states where sizes.tellsSize("a", state) {
            sizes.told("a", state)
            told.append(state)
        }
        return told
    }

    @Test func onceWithTheFirstFinishedOrElseWithDelivered() {
        #expect(told([.waiting(.queued), .downloading, .finished, .delivered]) == [.finished])
        #expect(told([.downloading, .finished, .finished, .delivered]) == [.finished], "a second finished tells nothing")
        #expect(told([.downloading, .delivered]) == [.delivered], "straight to the issue folder")
        #expect(told([.downloading, .finished, .failed("x"), .downloading, .finished, .delivered]) == [.finished, .finished],
                "a new transfer after a failure tells its own")
        #expect(told([.downloading, .finished, .cancelled, .delivered]) == [.finished, .delivered])
    }

    /// Not told (size 0, a claimed asset): the next end may tell it.
    @Test func anEndThatToldNothingLeavesItToTheNext() {
        var sizes = EndSizes()
        let atFinish = sizes.tellsSize("a", .finished)
        let atDelivery = sizes.tellsSize("a", .delivered)
        let whileRunning = sizes.tellsSize("b", .downloading)
        #expect(atFinish)
        #expect(atDelivery, "nothing went out with finished")
        #expect(!whileRunning)
    }
}
