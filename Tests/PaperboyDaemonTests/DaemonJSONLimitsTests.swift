import Foundation
import Paperboy
import PaperboyDaemon
import PaperboyFraming
import PaperboyTesting
import Testing

/// Requests whose JSON is out of the daemon's limits (issue 26, case 1): each gets `bad-request`
/// naming the door and the limit, with its id, and the connection answers the next request.
@Suite("The daemon's JSON limits", .timeLimit(.minutes(2)))
struct DaemonJSONLimitsTests {
    let home = DaemonHome()

    static func nested(_ levels: Int) -> String {
        String(repeating: "[", count: levels) + String(repeating: "]", count: levels)
    }

    @Test func aUserInfoNested250LevelsIsBadRequestAndTheConnectionGoesOn() async throws {
        try await home.withDaemon { _ in
            let client = try await WireClient.negotiated(home.socket)
            let payload = #"{"id":3,"issue":"x","request":{"url":"mem://example/a"},"user_info":\#(Self.nested(250))}"#
            #expect(payload.utf8.count < 600)
            let refused = try await client.request("ADDASSET", payload)
            #expect(errorCode(refused) == "bad-request", "\(WireClient.describe(refused))")
            #expect(json(refused)["id"] as? Int == 3)
            #expect(json(refused)["message"] as? String == "daemon request ADDASSET: JSON nested deeper than 64 levels at byte 131")
            let next = try await client.request("STATUS", #"{"id":4}"#)
            #expect(next.kind == "OK" && json(next)["id"] as? Int == 4, "\(WireClient.describe(next))")
        }
    }

    @Test func aPushPayloadNested300LevelsIsBadRequestAndTheConnectionGoesOn() async throws {
        try await home.withDaemon { _ in
            let client = try await WireClient.negotiated(home.socket)
            let payload = #"{"id":2,"payload":{"aps":{"content-available":1},"x":\#(Self.nested(300))}}"#
            let refused = try await client.request("NOTIFY", payload)
            #expect(errorCode(refused) == "bad-request", "\(WireClient.describe(refused))")
            #expect(json(refused)["id"] as? Int == 2)
            #expect(json(refused)["message"] as? String == "daemon request NOTIFY: JSON nested deeper than 64 levels at byte 115")
            let next = try await client.request("STATUS", #"{"id":5}"#)
            #expect(next.kind == "OK" && json(next)["id"] as? Int == 5, "\(WireClient.describe(next))")
        }
    }
}
