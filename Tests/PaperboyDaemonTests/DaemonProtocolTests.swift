import Foundation
import Paperboy
import PaperboyWire
import PaperboyDaemon
import PaperboyFraming
import PaperboyTestServers
import PaperboyTesting
import Testing

/// docs/Daemon.md's client protocol, spoken to an in-process server over its real Unix socket:
/// negotiation, the framing errors, the protocol's error codes, the library's, and ordering.
@Suite("The daemon's client protocol", .timeLimit(.minutes(2)))
struct DaemonProtocolTests {
    let home = DaemonHome()

    // MARK: Version negotiation

    @Test func helloAnswersTheVersionBothSpeakTheDaemonsVersionAndItsLibrary() async throws {
        try await home.withDaemon { daemon in
            let client = try await WireClient.connect(home.socket)
            // Fields a version-1 daemon does not know are ignored.
            let hello = try await client.request("HELLO", #"{"protocols":[7,1,2],"client":"test","later":{"x":[1]}}"#)
            #expect(hello.kind == "HELLO", "\(WireClient.describe(hello))")
            let fields = json(hello)
            #expect(fields["protocol"] as? Int == 1)
            #expect(fields["paperboy"] as? String == DaemonServer.version)
            #expect(fields["library"] as? String == daemon.library.root.path)
            #expect(try await client.request("STATUS", #"{"id":1}"#).kind == "OK")
        }
    }

    @Test func aHelloWithNoVersionTheDaemonSpeaksIsRefusedAndTheConnectionClosed() async throws {
        try await home.withDaemon { _ in
            for offered in ["[2,7]", "[]"] {
                let client = try await WireClient.connect(home.socket)
                try await client.send("HELLO", #"{"protocols":\#(offered)}"#)
                let frames = try await client.framesUntilClosed()
                #expect(frames.map(errorCode) == ["unsupported-version"], "offered \(offered): \(client.transcript)")
                #expect(frames.first.map(json)?["id"] == nil)
            }
            let client = try await WireClient.connect(home.socket)
            try await client.send("HELLO", #"{"protocols":[2,7]}"#)
            let refusal = try #require(try await client.framesUntilClosed().first)
            #expect(json(refusal)["message"] as? String == "none of the versions [2, 7] is spoken; this daemon speaks [1]")
            // The daemon serves the next client.
            _ = try await WireClient.negotiated(home.socket)
        }
    }

    /// Issue 27 (stated in docs/Daemon.md): a second `HELLO` is answered as the first and changes
    /// nothing else (the subscription stays: events still come); one with no version spoken is
    /// refused and the connection closed, as a first one.
    @Test func aSecondHelloIsAnsweredAsTheFirstAndKeepsTheSubscription() async throws {
        try await home.withDaemon { _ in
            let client = try await WireClient.negotiated(home.socket)
            #expect(try await client.request("SUBSCRIBE", #"{"id":1}"#).kind == "OK")
            let again = try await client.request("HELLO", #"{"protocols":[1],"client":"again"}"#)
            #expect(again.kind == "HELLO" && json(again)["protocol"] as? Int == 1, "\(WireClient.describe(again))")
            #expect(try await client.request("ADDISSUE", #"{"id":2,"name":"2026-11-21","date":"2026-11-21"}"#).kind == "OK")
            #expect(try await client.request("ADDASSET", #"{"id":3,"issue":"2026-11-21","request":{"url":"mem://example/a"},"download":true}"#).kind == "OK")
            _ = try await client.event("a state event after the second HELLO") { $0["event"] as? String == "state" }
            try await client.send("HELLO", #"{"protocols":[7]}"#)
            let frames = try await client.framesUntilClosed()
            #expect(frames.contains { errorCode($0) == "unsupported-version" }, "\(client.transcript)")
        }
    }

    @Test func aRequestBeforeHelloIsNotNegotiatedAndTheConnectionGoesOn() async throws {
        try await home.withDaemon { _ in
            let client = try await WireClient.connect(home.socket)
            let early = try await client.request("STATUS", #"{"id":1}"#)
            #expect(errorCode(early) == "not-negotiated")
            #expect(json(early)["id"] as? Int == 1)
            #expect(json(early)["message"] as? String == "STATUS before HELLO")
            #expect(try await client.request("HELLO", #"{"protocols":[1]}"#).kind == "HELLO")
            let status = try await client.request("STATUS", #"{"id":2}"#)
            #expect(status.kind == "OK")
            #expect(json(status)["id"] as? Int == 2)
        }
    }

    // MARK: Framing errors

    static let letters40 = String(repeating: "A", count: 40)
    static let malformed: [(sent: String, message: String)] = [
        ("hello 3\nabc", #"not a frame header: "hello 3\nabc""#),
        ("STATUS 1x\n{}", #"not a frame header: "STATUS 1x\n{}""#),
        ("STATUS -1\n", #"not a frame header: "STATUS -1\n""#),
        ("STATUS 12345678901\n", #"not a frame header: "STATUS 12345678901\n""#),
        ("\n", #"not a frame header: "\n""#),
        (letters40, "not a frame header: \"\(letters40)\""),
    ]

    @Test(arguments: malformed)
    func aMalformedHeaderGetsMalformedFrameThenTheConnectionClosesAndTheDaemonGoesOn(sent: String, message: String) async throws {
        try await home.withDaemon { _ in
            for negotiated in [false, true] {
                let client = negotiated ? try await WireClient.negotiated(home.socket) : try await WireClient.connect(home.socket)
                try await client.send(Data(sent.utf8))
                let frames = try await client.framesUntilClosed()
                #expect(frames.map(errorCode) == ["malformed-frame"], "negotiated: \(negotiated), \(client.transcript)")
                #expect(frames.first.map(json)?["message"] as? String == message)
            }
            _ = try await WireClient.negotiated(home.socket)
        }
    }

    @Test func aHeaderCutShortByTheEndOfInputIsMalformed() async throws {
        try await home.withDaemon { _ in
            let client = try await WireClient.negotiated(home.socket)
            try await client.send(Data("STATUS 5".utf8))
            client.endOutput()
            let frames = try await client.framesUntilClosed()
            #expect(frames.map(errorCode) == ["malformed-frame"], "\(client.transcript)")
            #expect(frames.first.map(json)?["message"] as? String == #"not a frame header: "STATUS 5" (then end of output)"#)
        }
    }

    @Test func aPayloadCutShortByTheEndOfInputEndsTheConnectionQuietly() async throws {
        try await home.withDaemon { _ in
            let client = try await WireClient.negotiated(home.socket)
            try await client.send(Data("STATUS 10\n{\"id\"".utf8))
            client.endOutput()
            #expect(try await client.framesUntilClosed().isEmpty, "\(client.transcript)")
            _ = try await WireClient.negotiated(home.socket)
        }
    }

    @Test func aLengthAbove256KiBIsRefusedWithoutWaitingForItsPayload() async throws {
        try await home.withDaemon { _ in
            for negotiated in [false, true] {
                let client = negotiated ? try await WireClient.negotiated(home.socket) : try await WireClient.connect(home.socket)
                // Only the header is sent: the answer cannot have waited for the payload.
                try await client.send(Data("ADDISSUE 262145\n".utf8))
                let frames = try await client.framesUntilClosed()
                #expect(frames.map(errorCode) == ["frame-too-large"], "\(client.transcript)")
                #expect(frames.first.map(json)?["message"] as? String == "ADDISSUE frame of 262145 bytes; the limit is 262144")
            }
            _ = try await WireClient.negotiated(home.socket)
        }
    }

    @Test func aPayloadOfExactly256KiBIsRead() async throws {
        try await home.withDaemon { _ in
            let client = try await WireClient.negotiated(home.socket)
            let request = #"{"id":7}"#
            let payload = request + String(repeating: " ", count: DaemonProtocol.maxPayloadLength - request.utf8.count)
            #expect(payload.utf8.count == 262_144)
            let answer = try await client.request("STATUS", payload)
            #expect(answer.kind == "OK", "\(WireClient.describe(answer))")
            #expect(json(answer)["id"] as? Int == 7)
        }
    }

    // MARK: Protocol errors that keep the connection

    @Test func badPayloadsAndUnknownKindsGetErrorsWithTheirIDsAndTheConnectionGoesOn() async throws {
        try await home.withDaemon { _ in
            let client = try await WireClient.negotiated(home.socket)
            let requests: [(kind: String, payload: String, code: String?, id: Int?)] = [
                ("STATUS", "{bad", "bad-request", nil),
                ("STATUS", #"{"id":-5}"#, "bad-request", -5),
                ("STATUS", #"{"id":9007199254740993}"#, "bad-request", 9_007_199_254_740_993),
                ("STATUS", #"{"id":9007199254740992}"#, nil, 9_007_199_254_740_992),
                ("STATUS", #"{"id":"one"}"#, "bad-request", nil),
                ("STATUS", #"{"id":1.5}"#, "bad-request", nil),
                ("STATUS", #"{"id":-1}"#, "bad-request", -1),
                ("ADDISSUE", #"{"id":3,"name":"x","date":"nope"}"#, "bad-request", 3),
                ("ADDISSUE", #"{"id":4,"date":"2026-01-01T00:00:00Z"}"#, "bad-request", 4),
                ("SUBSCRIBE", "{}", "bad-request", nil),
                ("FROBNICATE", #"{"id":5}"#, "unknown-kind", 5),
                ("OK", #"{"id":6}"#, "unknown-kind", 6),
                ("EVENT", #"{"id":7,"event":"finished"}"#, "unknown-kind", 7),
                ("ANSWER", #"{"id":8,"challenge":"00000000-0000-0000-0000-000000000000","disposition":"default"}"#, "unknown-challenge", 8),
                ("ANSWER", #"{"id":9,"challenge":"x","disposition":"shrug"}"#, "bad-request", 9),
                ("STATUS", #"{"id":10}"#, nil, 10),
            ]
            // Sent in one write: each is answered in order, none ends the connection.
            try await client.send(requests.map { Frame.encode($0.kind, Data($0.payload.utf8)) }.reduce(Data(), +))
            for request in requests {
                let answer = try await client.answer()
                let fields = json(answer)
                #expect(answer.kind == (request.code == nil ? "OK" : "ERROR"), "\(request.kind) \(request.payload): \(WireClient.describe(answer))")
                #expect(errorCode(answer) == request.code, "\(request.kind) \(request.payload): \(WireClient.describe(answer))")
                #expect(fields["id"] as? Int == request.id, "\(request.kind) \(request.payload): \(WireClient.describe(answer))")
                if request.code != nil { #expect((fields["message"] as? String)?.isEmpty == false) }
            }
        }
    }

    @Test func errorMessagesNameWhatWasWrong() async throws {
        try await home.withDaemon { _ in
            let client = try await WireClient.negotiated(home.socket)
            let cases: [(kind: String, payload: String, message: String)] = [
                ("STATUS", #"{"id":-5}"#, "STATUS id: expected an integer from 0 to 2^53, got -5"),
                // Issue 27: the field and the value, and what was expected, never "invalid JSON".
                ("STATUS", #"{"id":1.5}"#, "STATUS id: expected an integer from 0 to 2^53, got 1.5"),
                ("STATUS", #"{"id":-1}"#, "STATUS id: expected an integer from 0 to 2^53, got -1"),
                ("ADDISSUE", #"{"id":"7","name":"d","date":"2026-11-21T06:00:00Z"}"#,
                 #"ADDISSUE id: expected an integer from 0 to 2^53, got "7""#),
                // A date-time without an offset is refused (a date alone is midnight UTC: accepted).
                ("ADDISSUE", #"{"id":21,"name":"d","date":"2026-11-21T06:00:00"}"#,
                 #"ADDISSUE date: expected an ISO 8601 date (2026-11-21, midnight UTC) or date-time with an offset (2026-11-21T06:00:00Z), got "2026-11-21T06:00:00""#),
                ("ADDISSUE", #"{"id":27,"name":"d","date":20261121}"#,
                 "ADDISSUE date: expected an ISO 8601 date (2026-11-21, midnight UTC) or date-time with an offset (2026-11-21T06:00:00Z), got 20261121"),
                // Issue 27: one rule for integers, `id` or not: no fraction, no exponent.
                ("STATUS", #"{"id":1.0}"#, "STATUS id: expected an integer from 0 to 2^53, got 1.0"),
                ("SHELF", #"{"id":30,"offset":1.0}"#, "SHELF offset: expected an integer, got 1.0"),
                ("ADDASSET", #"{"id":31,"issue":"x","request":{"url":"mem://example/a","priority":1e3}}"#,
                 "ADDASSET request.priority: expected an integer, got 1e3"),
                ("PURGE", #"{"id":32,"keep":2,"budget_bytes":1E9}"#, "PURGE budget_bytes: expected an integer, got 1E9"),
                ("ADDASSET", #"{"id":22,"issue":"x","request":{"url":"mem://example/a"},"download":"yes"}"#,
                 #"ADDASSET download: expected a boolean, got "yes""#),
                ("ADDASSET", #"{"id":23,"issue":"x","request":{"url":"mem://example/a","max_bytes_per_second":"fast"}}"#,
                 #"ADDASSET request.max_bytes_per_second: expected an integer, got "fast""#),
                ("SHELF", #"{"id":24,"offset":2.5}"#, "SHELF offset: expected an integer, got 2.5"),
                ("ADDASSET", #"{"id":26,"issue":"x","request":{"sha256":"ab"}}"#, "ADDASSET: missing field 'request.url'"),
                ("ADDISSUE", #"{"id":25,"name":null,"date":"2026-11-21T06:00:00Z"}"#, "ADDISSUE name: expected a string, got null"),
                ("ADDISSUE", #"{"id":4,"date":"2026-01-01T00:00:00Z"}"#, "ADDISSUE: missing field 'name'"),
                // Year 10000 in UTC: refused at the door (issue 26, case 2), the library never sees it.
                ("ADDISSUE", #"{"id":7,"name":"far","date":"9999-12-31T23:00:00-05:00"}"#,
                 "ADDISSUE date: 10000-01-01T04:00:00Z is outside the dates the library records (years 1 to 9999 in UTC, whatever the offset)"),
                // Names and paths: refused at the door by the one rule (``IssueName``, ``RelativePath``),
                // which names the door and the value, escaped.
                ("ADDISSUE", #"{"id":8,"name":"\u202Efdp.exe","date":"2026-01-01T00:00:00Z"}"#,
                 "ADDISSUE name '\\u{202E}fdp.exe' must not contain NUL, control or bidi characters"),
                ("ADDASSET", #"{"id":9,"issue":"nope","request":{"url":"mem://example/a","destination_path":"a/../../b"}}"#,
                 "ADDASSET destination_path 'a/../../b' must not contain '..'"),
                // A secret of the wrong type is named, never shown: a header, a credential's password.
                ("ADDASSET", #"{"id":28,"issue":"x","request":{"url":"mem://example/a","headers":{"Authorization":31415926}}}"#,
                 "ADDASSET request.headers.Authorization: expected a string, got a value (not shown: it may hold a secret)"),
                ("ANSWER", #"{"id":29,"challenge":"c","disposition":"use-credential","credential":{"password":27182818}}"#,
                 "ANSWER credential.password: expected a string, got a value (not shown: it may hold a secret)"),
                ("FROBNICATE", #"{"id":5}"#, "unknown message kind FROBNICATE"),
                ("ACK", #"{"id":6,"asset":"nothing"}"#, "asset nothing has no file waiting for an acknowledgement"),
            ]
            for item in cases {
                let answer = try await client.request(item.kind, item.payload)
                #expect(json(answer)["message"] as? String == item.message, "\(WireClient.describe(answer))")
            }
        }
    }

    /// Issue 27: a date alone (ISO 8601's `2026-11-21`) is midnight UTC, and dates are read and
    /// written in the proleptic Gregorian calendar, as ``LibraryDate`` counts (Foundation's ISO
    /// 8601 parser read 1500-03-01 ten days off, and wrote it back as 1500-02-20).
    @Test func aDateAloneIsMidnightUTCAndDatesBefore1582AreReadAsTheLibraryCountsThem() async throws {
        try await home.withDaemon { daemon in
            let client = try await WireClient.negotiated(home.socket)
            for (id, name, date, shown) in [(1, "alone", "2026-11-21", "2026-11-21T00:00:00Z"),
                                            (2, "old", "1500-03-01", "1500-03-01T00:00:00Z"),
                                            (3, "older", "1500-03-01T12:30:00+02:00", "1500-03-01T10:30:00Z")] {
                let added = try await client.request("ADDISSUE", #"{"id":\#(id),"name":"\#(name)","date":"\#(date)"}"#)
                #expect(added.kind == "OK", "\(date): \(WireClient.describe(added))")
                #expect((json(added)["issue"] as? JSON)?["date"] as? String == shown, "\(date): \(WireClient.describe(added))")
            }
            #expect(try await daemon.library.issue(named: "alone")?.date == LibraryDate.utc(year: 2026, month: 11, day: 21))
            #expect(try await daemon.library.issue(named: "old")?.date == LibraryDate.utc(year: 1500, month: 3, day: 1))
            #expect(try await daemon.library.issue(named: "older")?.date == LibraryDate.utc(year: 1500, month: 3, day: 1, hour: 10, minute: 30))
            // Numbers in an app's own JSON are numbers: the integer rule is for integer fields.
            let asset = try await client.request(
                "ADDASSET", #"{"id":4,"issue":"alone","request":{"url":"mem://example/a"},"user_info":{"pages":1.0,"size":1e3}}"#)
            #expect(asset.kind == "OK", "\(WireClient.describe(asset))")
        }
    }

    // MARK: Library errors

    @Test func requestsAboutUnknownIssuesAndAssetsGetTheLibrarysCodes() async throws {
        try await home.withDaemon { _ in
            let client = try await WireClient.negotiated(home.socket)
            let added = try await client.request("ADDISSUE", #"{"id":1,"name":"2026-11-21","date":"2026-11-21T00:00:00Z"}"#)
            #expect(added.kind == "OK", "\(WireClient.describe(added))")
            #expect((json(added)["issue"] as? JSON)?["name"] as? String == "2026-11-21")
            let cases: [(kind: String, payload: String, code: String)] = [
                ("ADDISSUE", #"{"id":2,"name":"2026-11-21","date":"2026-11-21T00:00:00Z"}"#, "duplicate-issue"),
                ("ADDASSET", #"{"id":3,"issue":"nope","request":{"url":"mem://example/a"}}"#, "issue-not-found"),
                ("ADDASSET", #"{"id":4,"issue":"2026-11-21","request":{"url":"mem://example/a","destination_path":"../../escape"}}"#,
                 "invalid-path"),
                // Issue 26: spellings the library's copy of the rules let through, and the
                // configuration's (C1 controls) or the archive's (`\`) refused.
                ("ADDISSUE", #"{"id":17,"name":"a\u0085b","date":"2026-11-21T00:00:00Z"}"#, "invalid-issue-name"),
                ("ADDASSET", #"{"id":18,"issue":"2026-11-21","request":{"url":"mem://example/a","destination_path":"escape\\b"}}"#,
                 "invalid-path"),
                // A password in the URL would be stored: refused at this door as at the API's.
                ("ADDASSET", #"{"id":16,"issue":"2026-11-21","request":{"url":"https://reader:s3cret-pw@cdn.example.com/a.pdf"}}"#,
                 "invalid-request"),
                ("STATUS", #"{"id":5,"issue":"nope"}"#, "issue-not-found"),
                ("STATUS", #"{"id":6,"asset":"nope"}"#, "asset-not-found"),
                ("DOWNLOAD", #"{"id":7,"asset":"nope","deliver":true}"#, "asset-not-found"),
                ("RESUME", #"{"id":8,"asset":"nope"}"#, "asset-not-found"),
                ("PAUSE", #"{"id":9,"asset":"nope"}"#, "asset-not-found"),
                ("CANCEL", #"{"id":10,"asset":"nope"}"#, "asset-not-found"),
                ("ACK", #"{"id":11,"asset":"nope"}"#, "not-pending"),
                ("ASSETS", #"{"id":12,"issue":"nope"}"#, "issue-not-found"),
                ("ASSETS", #"{"id":13,"issue":"2026-11-21","after":"not a cursor"}"#, "bad-request"),
                ("STATES", #"{"id":19,"issue":"nope"}"#, "issue-not-found"),
                ("STATES", #"{"id":20,"issue":"2026-11-21","after":"not a cursor"}"#, "bad-request"),
                ("STATES", #"{"id":21,"issue":"2026-11-21","after":99}"#, "bad-request"),
                ("READ", #"{"id":14,"issue":"nope"}"#, "issue-not-found"),
                ("PURGE", #"{"id":15,"keep":-1}"#, "bad-request"),
            ]
            for item in cases {
                let answer = try await client.request(item.kind, item.payload)
                let fields = json(answer)
                #expect(errorCode(answer) == item.code, "\(item.kind) \(item.payload): \(WireClient.describe(answer))")
                #expect(fields["id"] as? Int != nil, "\(item.kind): \(WireClient.describe(answer))")
                #expect(!WireClient.describe(answer).contains("s3cret-pw"), "\(item.kind): \(WireClient.describe(answer))")
                if item.code != "not-pending", item.code != "bad-request" {
                    // Library errors carry LibraryError.reason and whether a retry can help.
                    #expect(fields["reason"] as? String == "other", "\(item.kind): \(WireClient.describe(answer))")
                    #expect(fields["retryable"] as? Bool == false, "\(item.kind): \(WireClient.describe(answer))")
                }
            }
            #expect(!FileManager.default.fileExists(atPath: home.folder.file("escape").path))
        }
    }

    // MARK: Numbers

    /// Byte counts and rates go through ``ByteCount``: out of range is refused naming the request, the
    /// field and the value, and the connection goes on.
    @Test func byteCountsAndRatesOutOfRangeAreRefusedNamingTheFieldAndTheValue() async throws {
        try await home.withDaemon { _ in
            let client = try await WireClient.negotiated(home.socket)
            let added = try await client.request("ADDISSUE", #"{"id":1,"name":"2026-11-21","date":"2026-11-21T00:00:00Z"}"#)
            #expect(added.kind == "OK", "\(WireClient.describe(added))")
            let cases: [(kind: String, payload: String, code: String, message: String)] = [
                ("PURGE", #"{"id":2,"budget_bytes":4611686018427387905}"#, "bad-request",
                 "PURGE budget_bytes: expected a number of bytes (a whole number from 0 to 2^62), got 4611686018427387905"),
                ("PURGE", #"{"id":3,"budget_bytes":-5}"#, "bad-request", "PURGE budget_bytes: expected a number of bytes"),
                ("ADDASSET", #"{"id":4,"issue":"2026-11-21","request":{"url":"mem://example/a","max_bytes_per_second":0}}"#,
                 "invalid-request", "maxBytesPerSecond of mem://example/a: expected a rate of at least 1 B/s and at most 2^62 B/s, got 0"),
                ("ADDASSET", #"{"id":5,"issue":"2026-11-21","request":{"url":"mem://example/a","max_bytes_per_second":-1}}"#,
                 "invalid-request", "got -1"),
            ]
            for item in cases {
                let answer = try await client.request(item.kind, item.payload)
                #expect(errorCode(answer) == item.code, "\(item.payload): \(WireClient.describe(answer))")
                #expect((json(answer)["message"] as? String)?.contains(item.message) == true, "\(WireClient.describe(answer))")
            }
            // Nothing was purged or added; the connection still answers.
            let status = try await client.request("STATUS", #"{"id":6,"issue":"2026-11-21"}"#)
            #expect(status.kind == "OK", "\(WireClient.describe(status))")
            #expect(((json(status)["issue"] as? JSON)?["assets"] as? [Any])?.isEmpty ?? true, "\(WireClient.describe(status))")
        }
    }

    // MARK: Order

    @Test func pipelinedRequestsAreAnsweredInOrder() async throws {
        try await home.withDaemon { _ in
            let client = try await WireClient.negotiated(home.socket)
            try await client.send((1...40).map { Frame.encode("STATUS", Data(#"{"id":\#($0),"assets":false}"#.utf8)) }.reduce(Data(), +))
            var ids: [Int] = []
            for _ in 1...40 { ids.append(json(try await client.answer())["id"] as? Int ?? -1) }
            #expect(ids == Array(1...40))
        }
    }

    @Test func reloadIsAnsweredWhenItIsDoneAndRequestsSentMeanwhileFirst() async throws {
        let gate = Gate()
        try await home.withDaemon(reload: {
            await gate.pass()
            return 3
        }) { _ in
            let client = try await WireClient.negotiated(home.socket)
            try await client.send("RELOAD", #"{"id":1}"#)
            try await eventually("the reload to start", seen: "\(gate.arrivals) arrival(s)") { gate.arrivals == 1 }
            let status = try await client.request("STATUS", #"{"id":2}"#)
            #expect(status.kind == "OK")
            #expect(json(status)["id"] as? Int == 2, "the STATUS sent after RELOAD is answered first")
            gate.open()
            let reload = try await client.answer()
            #expect(reload.kind == "OK", "\(WireClient.describe(reload))")
            #expect(json(reload)["id"] as? Int == 1)
            #expect(json(reload)["added_issues"] as? Int == 3)
        }
    }

    struct ConfigurationProblem: Error, CustomStringConvertible {
        var description: String { "paperboy.toml:3: limit must be a rate" }
    }

    @Test func aFailedReloadIsReloadFailedAndSaysWhy() async throws {
        try await home.withDaemon(reload: { throw ConfigurationProblem() }) { _ in
            let client = try await WireClient.negotiated(home.socket)
            let answer = try await client.request("RELOAD", #"{"id":4}"#)
            #expect(errorCode(answer) == "reload-failed")
            #expect(json(answer)["id"] as? Int == 4)
            #expect((json(answer)["message"] as? String)?.contains("paperboy.toml:3: limit must be a rate") == true,
                    "\(WireClient.describe(answer))")
            #expect(try await client.request("STATUS", #"{"id":5}"#).kind == "OK", "the connection goes on")
        }
    }
}
