import Foundation
import Paperboy
import PaperboyWire
import PaperboyDaemon
import PaperboyFraming
import PaperboyTestServers
import PaperboyTesting
import Testing

/// docs/Daemon.md's failures on the wire: an `ERROR` object's `code`, `reason`, `transport_code`
/// and `retryable`, the same object in a failed `state` (status and events), `state` events for
/// failed and cancelled assets, and `attempts` in every asset object.
@Suite("Failures on the daemon's wire", .timeLimit(.minutes(2)))
struct FailureWireTests {
    let home = DaemonHome()

    func asset(_ frame: Frame) -> JSON { json(frame)["asset"] as? JSON ?? [:] }

    @Test func a401FailureIsTransportWithItsTransportCodeAndReasonInStatusAndEvents() async throws {
        try await home.withDaemon { daemon in
            let client = try await WireClient.negotiated(home.socket)
            #expect(try await client.request("SUBSCRIBE", #"{"id":1}"#).kind == "OK")
            let issue = try await daemon.library.addIssue(name: "i", date: Date())
            let url = home.transport.serve(Data("x".utf8), at: "locked.bin",
                                           script: [.fail(TransportError(.authenticationFailed, "HTTP 401 Unauthorized"))])
            let locked = try await issue.addAsset(AssetRequest(url: url, destinationPath: "locked.bin"))
            try await locked.download()
            guard case .failed(let failure) = try await locked.waitUntilFinished() else {
                Issue.record("the 401 should fail the asset")
                return
            }
            let event = try await client.event("the failed state of \(locked.identifier)") { event in
                event["event"] as? String == "state" && event["asset"] as? String == locked.identifier
                    && (event["state"] as? JSON)?["name"] as? String == "failed"
            }
            let status = try await client.request("STATUS", #"{"id":2,"asset":"\#(locked.identifier)"}"#)
            for state in [event["state"] as? JSON, asset(status)["state"] as? JSON] {
                let error = state?["error"] as? JSON ?? [:]
                #expect(error["code"] as? String == "transport", "\(error)")
                #expect(error["transport_code"] as? String == "authentication-failed", "\(error)")
                #expect(error["reason"] as? String == "authentication", "\(error)")
                #expect(error["retryable"] as? Bool == false, "\(error)")
                #expect(error["message"] as? String == failure.message, "\(error)")
                #expect(error["id"] == nil)
                #expect(state?["message"] as? String == failure.message)
            }
            #expect(asset(status)["attempts"] as? Int == 1, "\(asset(status))")
        }
    }

    @Test func aLibraryErrorHasItsReasonAndNoTransportCode() async throws {
        try await home.withDaemon { _ in
            let client = try await WireClient.negotiated(home.socket)
            #expect(try await client.request("ADDISSUE", #"{"id":1,"name":"i","date":"2026-11-21T00:00:00Z"}"#).kind == "OK")
            let duplicate = json(try await client.request("ADDISSUE", #"{"id":2,"name":"i","date":"2026-11-21T00:00:00Z"}"#))
            #expect(duplicate["code"] as? String == "duplicate-issue")
            #expect(duplicate["reason"] as? String == "other")
            #expect(duplicate["retryable"] as? Bool == false)
            #expect(duplicate["transport_code"] == nil)
        }
    }

    @Test func aCancelledDownloadIsAStateEventAndAssetObjectsCarryAttemptsWhileDownloadingAndAfterDelivery() async throws {
        try await home.withDaemon { daemon in
            let client = try await WireClient.negotiated(home.socket)
            #expect(try await client.request("SUBSCRIBE", #"{"id":1}"#).kind == "OK")
            let issue = try await daemon.library.addIssue(name: "i", date: Date())
            let slow = try await issue.addAsset(AssetRequest(
                url: home.transport.serve(randomData(256 * 1024), at: "slow.bin", script: [.stallAfter(64 * 1024)]), destinationPath: "slow.bin"))
            try await slow.download()
            try await eventually("the transfer to stall", seen: "\(slow.totalBytesWritten)") { slow.totalBytesWritten >= 64 * 1024 }
            let downloading = asset(try await client.request("STATUS", #"{"id":2,"asset":"\#(slow.identifier)"}"#))
            #expect((downloading["state"] as? JSON)?["name"] as? String == "downloading")
            #expect(downloading["attempts"] as? Int == 0, "\(downloading)")
            let cancelled = try await client.request("CANCEL", #"{"id":3,"asset":"\#(slow.identifier)"}"#)
            #expect(cancelled.kind == "OK")
            #expect(asset(cancelled)["attempts"] as? Int == 0, "\(asset(cancelled))")
            _ = try await client.event("the cancelled state of \(slow.identifier)") { event in
                event["event"] as? String == "state" && event["asset"] as? String == slow.identifier
                    && (event["state"] as? JSON)?["name"] as? String == "cancelled"
            }

            let quick = try await issue.addAsset(AssetRequest(url: home.transport.serve(Data("q".utf8), at: "q.bin"), destinationPath: "q.bin"))
            try await quick.download()
            #expect(try await quick.waitUntilFinished() == .delivered)
            let delivered = asset(try await client.request("STATUS", #"{"id":4,"asset":"\#(quick.identifier)"}"#))
            #expect((delivered["state"] as? JSON)?["name"] as? String == "delivered")
            #expect(delivered["attempts"] as? Int == 0, "\(delivered)")
        }
    }

    @Test func theProtocolErrorCodesAreTheOnesDaemonMdLists() throws {
        let doc = try String(contentsOf: URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../docs/Daemon.md").standardized, encoding: .utf8)
        let errors = try #require(doc.components(separatedBy: "### Errors").dropFirst().first?.components(separatedBy: "###").first)
        let section = try #require(errors.components(separatedBy: "Protocol codes:").dropFirst().first)
        let listed = Set(section.split(separator: "\n").filter { $0.hasPrefix("| `") }.compactMap { line in
            line.split(separator: "`").dropFirst().first.map(String.init)
        })
        #expect(listed == Set(DaemonProtocol.ErrorCode.all), "docs list \(listed.sorted()); the daemon has \(DaemonProtocol.ErrorCode.all.sorted())")
    }
}
