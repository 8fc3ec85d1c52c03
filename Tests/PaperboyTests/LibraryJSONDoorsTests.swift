import Foundation
import GRDB
import Testing
@testable import Paperboy
import PaperboyTesting

/// The library's own JSON doors: a push payload given to ``Library/contentAvailable(payload:throttle:dontThrottle:now:)``,
/// an asset's `userInfo` on its way in and back out of the database.
@Suite("Library JSON doors", .timeLimit(.minutes(2)))
struct LibraryJSONDoorsTests {
    let folder = TempFolder()

    func open() throws -> Library {
        try Library.open(at: folder.file("library"), transports: TransportRegistry([InMemoryTransport()]), configuration: .forTests())
    }

    static func nested(_ levels: Int) -> JSONValue {
        (0..<levels).reduce(JSONValue.array([])) { inner, _ in .array([inner]) }
    }

    /// App values out of the limits of ``JSONReader/Limits/appValue``, with the exact problem.
    static let hostile: [(value: JSONValue, problem: String)] = [
        (nested(32), "JSON nested deeper than 32 levels at byte 32"),
        (.object(["a": nested(31)]), "JSON nested deeper than 32 levels at byte 36"),
        (.string(String(repeating: "a", count: 70_000)), "JSON of 70002 bytes; the limit is 65536"),
        (.array(Array(repeating: .number(0), count: 16_385)), "JSON array of more than 16384 elements at byte 32769"),
        (.array([.number(.nan)]), "a number JSON cannot hold (NaN or infinite)"),
        (.array([.number(.infinity)]), "a number JSON cannot hold (NaN or infinite)"),
    ]

    @Test func aPushPayloadOutOfTheLimitsIsRefusedNamingTheLimit() async throws {
        let library = try open()
        for (value, problem) in Self.hostile {
            let error = try await #require(throws: LibraryError.self) { try await library.contentAvailable(payload: value) }
            #expect(error.code == .invalidRequest)
            #expect(error.message == "push payload: \(problem)")
        }
        // Nothing was recorded: the next trigger is not throttled by the refused ones.
        #expect(library.lastContentRefresh == nil)
        await #expect(try library.contentAvailable(payload: ["aps": ["content-available": 1], "x": Self.nested(30)]) == .refresh)
        await library.close()
    }

    /// A push payload's one number, `content-available`, is compared as read (a `Double`), never
    /// converted: huge, negative, fractional and near-1 values are no trigger and no trap, and a
    /// number no `Double` holds is refused by the reader, naming the door.
    @Test func onlyAContentAvailableOfOneTriggersWhateverTheNumber() async throws {
        let library = try open()
        func decision(_ value: String) async throws -> ContentAvailableResult {
            let payload = try JSONReader.pushPayload.decode(JSONValue.self, from: Data(#"{"aps":{"content-available":\#(value)}}"#.utf8))
            return try await library.contentAvailable(payload: payload, dontThrottle: true)
        }
        for value in ["1", "1.0", "1e0", "10e-1", "true", #""1""#] {
            #expect(try await decision(value) == .refresh, "\(value)")
        }
        for value in ["0", "2", "-1", "1.0000000001", "0.9999999999", "1e300", "-1e300", "9223372036854775808", "18446744073709551617",
                      "5e-324", "false", "null", #""01""#, #""yes""#, "[1]", #"{"a":1}"#] {
            #expect(try await decision(value) == .ignored, "\(value)")
        }
        for value in ["1e999", "-1e999"] {
            let error = try await #require(throws: JSONInputError.self, "\(value)") { try await decision(value) }
            #expect(error.description.hasPrefix("push payload: "), "\(error.description)")
        }
        await library.close()
    }

    @Test func aUserInfoOutOfTheLimitsIsRefusedWithItsExactError() async throws {
        let library = try open()
        let issue = try await library.addIssue(name: "i", date: Date())
        for (index, (value, problem)) in Self.hostile.enumerated() {
            let url = URL(string: "mem://example/\(index)")!
            let error = try await #require(throws: LibraryError.self) { try await issue.addAsset(AssetRequest(url: url), userInfo: value) }
            #expect(error.code == .userInfoTooLarge)
            #expect(error.message == "userInfo of asset mem://example/\(index): \(problem)")
        }
        // The deepest value let in is stored and read back.
        let kept = try await issue.addAsset(AssetRequest(url: URL(string: "mem://example/kept")!), userInfo: Self.nested(31))
        #expect(kept.userInfo == Self.nested(31))
        await library.close()
    }

    @Test func aStoredUserInfoMadeHostileReadsAsNoneNeverATrap() async throws {
        var library = try open()
        let issue = try await library.addIssue(name: "i", date: Date())
        let asset = try await issue.addAsset(AssetRequest(url: URL(string: "mem://example/a")!), userInfo: ["kept": true])
        let deep = String(repeating: "[", count: 5_000) + String(repeating: "]", count: 5_000)
        try await library.scheduler.store.pool.write { db in
            try db.execute(sql: "UPDATE asset SET userInfo = ? WHERE id = ?", arguments: [Data(deep.utf8), asset.identifier])
        }
        await library.close()
        library = try open()
        let reopened = try #require(await library.asset(identifier: asset.identifier))
        // Read on a thread with a small stack, as the daemon's connection threads read it.
        let userInfo = try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<JSONValue?, any Error>) in
            let thread = Thread { continuation.resume(returning: reopened.userInfo) }
            thread.stackSize = 256 * 1024
            thread.start()
        }
        #expect(userInfo == nil)
        await library.close()
    }
}
