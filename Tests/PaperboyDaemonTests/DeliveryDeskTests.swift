import Foundation
import Paperboy
import PaperboyDaemon
import PaperboyFraming
import PaperboyTestServers
import PaperboyTesting
import Testing

/// docs/Daemon.md "Delivery: files wait for a client": a claimed file waits in the inbox for an
/// `ACK`, is handed to every client that subscribes until one acknowledges it (at least once),
/// across disconnections and restarts; `daemon-claims.json` records the claims, private and whole.
@Suite("Deliveries that wait for a client", .timeLimit(.minutes(2)))
struct DeliveryDeskTests {
    let home = DaemonHome()
    let issue = "2026-11-21"

    var claimsFile: URL { home.libraryURL.appendingPathComponent("daemon-claims.json") }

    /// The claims file's list, or nil when it is missing or not a list of strings.
    func claims() -> [String]? {
        (try? Data(contentsOf: claimsFile)).flatMap { try? JSONDecoder().decode([String].self, from: $0) }
    }

    /// Where the asset `name` is delivered (its `destination_path` in the issue's content folder).
    func destination(_ name: String, _ daemon: RunningDaemon) async throws -> URL {
        try #require(await daemon.library.issue(named: issue)).contentURL.appendingPathComponent("files/\(name)")
    }

    /// Adds the issue (once) and an asset served by the in-memory transport, started at once.
    func addAsset(_ client: WireClient, _ name: String, data: Data? = nil, deliver: Bool, id: Int) async throws -> String {
        let url = data.map { home.transport.serve($0, at: name) } ?? URL(string: "mem://example/\(name)")!
        _ = try await client.request("ADDISSUE", #"{"id":\#(id),"name":"\#(issue)","date":"2026-11-21T00:00:00Z"}"#)
        let added = try await client.request("ADDASSET", #"""
            {"id":\#(id + 1),"issue":"\#(issue)","request":{"url":"\#(url.absoluteString)","destination_path":"files/\#(name)"},
             "download":true,"deliver":\#(deliver),"user_info":{"n":1}}
            """#)
        let asset = (json(added)["asset"] as? JSON)?["id"] as? String
        return try #require(asset, "ADDASSET answered \(WireClient.describe(added))")
    }

    func subscribe(_ client: WireClient, id: Int = 100) async throws {
        let answer = try await client.request("SUBSCRIBE", #"{"id":\#(id)}"#)
        #expect(answer.kind == "OK", "\(WireClient.describe(answer))")
    }

    func finishedEvent(_ client: WireClient, _ asset: String) async throws -> JSON {
        try await client.event("the finished event of \(asset)") { $0["event"] as? String == "finished" && $0["asset"] as? String == asset }
    }

    func stateEvent(_ client: WireClient, _ asset: String, _ name: String) async throws -> JSON {
        try await client.event("\(asset) \(name)") {
            $0["event"] as? String == "state" && $0["asset"] as? String == asset && ($0["state"] as? JSON)?["name"] as? String == name
        }
    }

    @Test func aClaimedFileWaitsForAnAckAndGoesToEachNewClientUntilOneAcknowledgesIt() async throws {
        let data = try await generated(300_000, seed: 11)
        try await home.withDaemon { daemon in
            let first = try await WireClient.negotiated(home.socket)
            try await subscribe(first)
            let asset = try await addAsset(first, "a.bin", data: data, deliver: true, id: 1)
            let finished = try await finishedEvent(first, asset)
            #expect(finished["issue"] as? String == issue)
            let path = try #require(finished["path"] as? String)
            #expect(FileManager.default.contents(atPath: path) == data, "the file waits at the event's path")
            #expect(!FileManager.default.fileExists(atPath: try await destination("a.bin", daemon).path))

            // The first client leaves without an ACK: the file keeps waiting.
            first.disconnect()
            let second = try await WireClient.negotiated(home.socket)
            let status = try await second.request("STATUS", #"{"id":1,"asset":"\#(asset)"}"#)
            #expect(((json(status)["asset"] as? JSON)?["state"] as? JSON)?["name"] as? String == "finished")
            try await subscribe(second)
            let replayed = try await finishedEvent(second, asset)
            #expect(replayed["path"] as? String == path)
            #expect(FileManager.default.contents(atPath: path) == data)

            let ack = try await second.request("ACK", #"{"id":2,"asset":"\#(asset)"}"#)
            #expect(ack.kind == "OK", "\(WireClient.describe(ack))")
            _ = try await stateEvent(second, asset, "delivered")
            #expect(FileManager.default.contents(atPath: try await destination("a.bin", daemon).path) == data)
            #expect(!FileManager.default.fileExists(atPath: path), "the inbox file was moved")
            let available = try await second.event("issue-available") { $0["event"] as? String == "issue-available" }
            #expect(available["issue"] as? String == issue)
            let badge = try await second.event("badge") { $0["event"] as? String == "badge" }
            #expect(badge["badge"] as? Int == 1)

            // Acknowledged: never again.
            let third = try await WireClient.negotiated(home.socket)
            try await third.send(Frame.encode("SUBSCRIBE", Data(#"{"id":1}"#.utf8)) + Frame.encode("STATUS", Data(#"{"id":2,"assets":false}"#.utf8)))
            var frames: [Frame] = []
            while frames.last.map({ json($0)["id"] as? Int }) != 2 { frames.append(try #require(try await third.next())) }
            #expect(frames.map(\.kind) == ["OK", "OK"], "nothing replayed: \(third.transcript)")
            #expect(errorCode(try await third.request("ACK", #"{"id":3,"asset":"\#(asset)"}"#)) == "not-pending")
        }
    }

    @Test func aClaimedFileWaitsAcrossARestartOfTheDaemon() async throws {
        let data = try await generated(100_000, seed: 12)
        let (asset, path) = try await home.withDaemon { _ in
            let client = try await WireClient.negotiated(home.socket)
            try await subscribe(client)
            let asset = try await addAsset(client, "b.bin", data: data, deliver: true, id: 1)
            let path = try #require(try await finishedEvent(client, asset)["path"] as? String)
            client.disconnect()
            return (asset, path)
        }
        #expect(FileManager.default.contents(atPath: path) == data, "stopped without an ACK, the file stays in the inbox")
        #expect(claims() == [asset])
        try await home.withDaemon { daemon in
            let client = try await WireClient.negotiated(home.socket)
            try await subscribe(client)
            #expect(try await finishedEvent(client, asset)["path"] as? String == path)
            #expect(try await client.request("ACK", #"{"id":1,"asset":"\#(asset)"}"#).kind == "OK")
            _ = try await stateEvent(client, asset, "delivered")
            #expect(FileManager.default.contents(atPath: try await destination("b.bin", daemon).path) == data)
            #expect(claims() == [])
        }
    }

    @Test func theClaimsFileIsPrivateAndListsEveryClaimWhenEachRequestIsAnswered() async throws {
        try await home.withDaemon { _ in
            let client = try await WireClient.negotiated(home.socket)
            try await subscribe(client)
            var claimed: [String] = []
            for (number, name) in ["c1.bin", "c2.bin", "c3.bin"].enumerated() {
                claimed.append(try await addAsset(client, name, data: try await generated(20_000, seed: UInt64(number)), deliver: true, id: 10 * number + 1))
                // Written before the ADDASSET was answered.
                #expect(claims() == claimed.sorted(), "after \(name)")
            }
            _ = try await addAsset(client, "u.bin", data: try await generated(1_000, seed: 9), deliver: false, id: 50)
            #expect(claims() == claimed.sorted(), "an asset without a delegate is not claimed")
            #expect(home.mode(claimsFile) == 0o600)
            for asset in claimed { _ = try await finishedEvent(client, asset) }
            #expect(try await client.request("ACK", #"{"id":60,"asset":"\#(claimed[1])"}"#).kind == "OK")
            #expect(claims() == [claimed[0], claimed[2]].sorted(), "written before the ACK was answered")
            #expect(home.mode(claimsFile) == 0o600)
            let leftovers = try FileManager.default.contentsOfDirectory(atPath: home.libraryURL.path).filter { $0.hasPrefix("daemon-claims.json.") }
            #expect(leftovers.isEmpty, "no temporary file left: \(leftovers)")
        }
    }

    @Test func anUnreadableClaimsFileIsKeptAsideAndTheWaitingFileClaimedAgain() async throws {
        let data = try await generated(50_000, seed: 13)
        let (asset, path) = try await home.withDaemon { _ in
            let client = try await WireClient.negotiated(home.socket)
            try await subscribe(client)
            let asset = try await addAsset(client, "d.bin", data: data, deliver: true, id: 1)
            return (asset, try #require(try await finishedEvent(client, asset)["path"] as? String))
        }
        try Data("{not a list".utf8).write(to: claimsFile)
        try await home.withDaemon { _ in
            let aside = home.libraryURL.appendingPathComponent("daemon-claims.json.corrupt-1")
            #expect(FileManager.default.contents(atPath: aside.path) == Data("{not a list".utf8))
            #expect(claims() == [asset], "rebuilt from the file waiting in the inbox")
            let client = try await WireClient.negotiated(home.socket)
            try await subscribe(client)
            #expect(try await finishedEvent(client, asset)["path"] as? String == path)
        }
    }

    @Test func anAssetWithoutADelegateIsDeliveredWithoutWaitingForAnAck() async throws {
        let data = try await generated(70_000, seed: 14)
        try await home.withDaemon { daemon in
            let client = try await WireClient.negotiated(home.socket)
            try await subscribe(client)
            let asset = try await addAsset(client, "e.bin", data: data, deliver: false, id: 1)
            let delivered = try await client.event("\(asset) delivered") { event in
                #expect(event["event"] as? String != "finished", "an unclaimed asset waits for nobody: \(event)")
                return event["event"] as? String == "state" && ((event["state"] as? JSON)?["name"] as? String) == "delivered"
            }
            #expect(delivered["asset"] as? String == asset)
            #expect(FileManager.default.contents(atPath: try await destination("e.bin", daemon).path) == data)
            #expect((claims() ?? []).isEmpty)
        }
    }

    @Test func aFailedClaimedAssetSendsFailedAndDropsItsClaim() async throws {
        try await home.withDaemon { _ in
            let client = try await WireClient.negotiated(home.socket)
            try await subscribe(client)
            // Nothing is served there: the transport answers not-found, which no retry helps.
            let asset = try await addAsset(client, "missing.bin", deliver: true, id: 1)
            let failed = try await client.event("\(asset) failed") { $0["event"] as? String == "failed" && $0["asset"] as? String == asset }
            let error = try #require(failed["error"] as? JSON, "\(failed)")
            #expect(error["reason"] as? String == "not-found", "\(error)")
            #expect(error["retryable"] as? Bool == false)
            #expect(failed["issue"] as? String == issue)
            #expect(claims() == [], "the claim is dropped")
        }
    }

    @Test func cancellingAClaimedAssetDropsItsClaimAndFailsItForItsClient() async throws {
        try await home.withDaemon { _ in
            let client = try await WireClient.negotiated(home.socket)
            try await subscribe(client)
            home.transport.serve(try await generated(50_000, seed: 15), at: "stalls.bin", script: [.stallAfter(1_000)])
            let asset = try await addAsset(client, "stalls.bin", deliver: true, id: 1)
            #expect(claims() == [asset])
            _ = try await stateEvent(client, asset, "downloading")
            let cancel = try await client.request("CANCEL", #"{"id":5,"asset":"\#(asset)"}"#)
            #expect(cancel.kind == "OK", "\(WireClient.describe(cancel))")
            #expect(claims() == [], "dropped before CANCEL was answered")
            var states: [String] = []
            let failed = try await client.event("\(asset) failed") { event in
                if event["event"] as? String == "state", let name = (event["state"] as? JSON)?["name"] as? String { states.append(name) }
                return event["event"] as? String == "failed" && event["asset"] as? String == asset
            }
            #expect((failed["error"] as? JSON)?["code"] as? String == "cancelled", "\(failed)")
            let status = try await client.request("STATUS", #"{"id":6,"asset":"\#(asset)"}"#)
            #expect(((json(status)["asset"] as? JSON)?["state"] as? JSON)?["name"] as? String == "cancelled")

            // Started again, it is delivered; the events of the cancellation came before those.
            #expect(try await client.request("DOWNLOAD", #"{"id":7,"asset":"\#(asset)"}"#).kind == "OK")
            _ = try await client.event("\(asset) delivered") { event in
                guard event["event"] as? String == "state", event["asset"] as? String == asset,
                      let name = (event["state"] as? JSON)?["name"] as? String else { return false }
                states.append(name)
                return name == "delivered"
            }
            // docs/Daemon.md: `state` is sent when "any asset changed state", cancelled included.
            #expect(states.contains("cancelled"), "state events of \(asset): \(states)")
        }
    }
}
