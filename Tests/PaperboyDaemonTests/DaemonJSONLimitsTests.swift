import Foundation
import Paperboy
import PaperboyDaemon
import PaperboyFraming
import PaperboyTestServers
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

    static func offset(of needle: String, in text: String) -> Int {
        text.utf8.count - text.components(separatedBy: needle).dropFirst().joined(separator: needle).utf8.count - needle.utf8.count
    }

    static let members = #"{"id":4,"x":{"# + (0...16_384).map { #""k\#($0)":0"# }.joined(separator: ",") + "}}"

    /// One request per limit and per malformation, each with its exact message.
    static let hostile: [(payload: String, id: Int, message: String)] = [
        (#"{"id":1,"x":"# + nested(70) + "}", 1, "JSON nested deeper than 64 levels at byte 75"),
        (#"{"id":2,"x":"# + String(repeating: #"{"a":"#, count: 70) + "1" + String(repeating: "}", count: 71), 2,
         "JSON nested deeper than 64 levels at byte 327"),
        (#"{"id":3,"x":""# + String(repeating: "a", count: 65_537) + #""}"#, 3, "JSON string longer than 65536 bytes at byte 12"),
        (members, 4, "JSON object of more than 16384 members at byte \(offset(of: #""k16384""#, in: members))"),
        (#"{"id":5,"x":["# + Array(repeating: "0", count: 65_537).joined(separator: ",") + "]}", 5,
         "JSON array of more than 65536 elements at byte 131085"),
        (#"{"id":6,"x":[1,2"#, 6, "invalid JSON at byte 16: unexpected end of the JSON"),
        ("{\"id\":7,\"x\":\"a\u{0}\"}", 7, "invalid JSON at byte 14: control character U+0000 in a string"),
        (#"{"id":8,"x":"\ud800"}"#, 8, "invalid JSON at byte 13: lone surrogate \\ud800 in a string"),
        (#"{"id":9,"x":1e999}"#, 9, "JSON number 1e999 is out of range at byte 12"),
    ]

    @Test func eachHostileRequestIsBadRequestWithItsIDAndTheConnectionGoesOn() async throws {
        try await home.withDaemon { _ in
            let client = try await WireClient.negotiated(home.socket)
            // Sent in one write: each answered in order, none ends the connection.
            let frames = try await generatedFrames()
            try await client.send(frames)
            for item in Self.hostile {
                let answer = try await client.answer()
                #expect(errorCode(answer) == "bad-request", "\(item.id): \(WireClient.describe(answer))")
                #expect(json(answer)["id"] as? Int == item.id, "\(WireClient.describe(answer))")
                #expect(json(answer)["message"] as? String == "daemon request STATUS: \(item.message)", "\(WireClient.describe(answer))")
            }
            let next = try await client.request("STATUS", #"{"id":10}"#)
            #expect(next.kind == "OK" && json(next)["id"] as? Int == 10, "\(WireClient.describe(next))")
        }
    }

    /// The hostile requests as frames, made on a thread of their own (half a megabyte of text).
    func generatedFrames() async throws -> Data {
        try await offThePool { Self.hostile.map { Frame.encode("STATUS", Data($0.payload.utf8)) }.reduce(Data(), +) }
    }

    @Test func aUserInfoWithinTheFrameButDeeperThan32LevelsGetsTheLibrarysErrorAs32LevelsAreKept() async throws {
        try await home.withDaemon { _ in
            let client = try await WireClient.negotiated(home.socket)
            let added = try await client.request("ADDISSUE", #"{"id":1,"name":"2026-11-21","date":"2026-11-21T00:00:00Z"}"#)
            #expect(added.kind == "OK", "\(WireClient.describe(added))")
            let deep = try await client.request(
                "ADDASSET", #"{"id":2,"issue":"2026-11-21","request":{"url":"mem://example/a"},"user_info":\#(Self.nested(33))}"#)
            #expect(errorCode(deep) == "user-info-too-large", "\(WireClient.describe(deep))")
            #expect(json(deep)["message"] as? String == "userInfo of asset mem://example/a: JSON nested deeper than 32 levels at byte 32")
            let kept = try await client.request(
                "ADDASSET", #"{"id":3,"issue":"2026-11-21","request":{"url":"mem://example/a"},"user_info":\#(Self.nested(32))}"#)
            #expect(kept.kind == "OK", "\(WireClient.describe(kept))")
            let asset = try #require((json(kept)["asset"] as? JSON)?["id"] as? String)
            let status = try await client.request("STATUS", #"{"id":4,"asset":"\#(asset)"}"#)
            let userInfo = (json(status)["asset"] as? JSON)?["user_info"]
            var depth = 0
            var value = userInfo
            while let array = value as? [Any] {
                depth += 1
                value = array.first
            }
            #expect(depth == 32, "\(WireClient.describe(status))")
        }
    }
}
