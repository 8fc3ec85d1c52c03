import Foundation
import GRDB
import Testing
@testable import Paperboy
import PaperboyTesting

/// Requests are typed columns since migration v3: a library written with JSON requests (the
/// schema of v1 and v2) opens with every field intact, and failures keep their codes.
@Suite("Request columns", .timeLimit(.minutes(2)))
struct RequestColumnsTests {
    let folder = TempFolder()
    var root: URL { folder.file("library") }
    var database: URL { root.appendingPathComponent("library.sqlite") }

    func open(_ transport: InMemoryTransport = InMemoryTransport()) throws -> Library {
        try Library.open(at: root, transports: TransportRegistry([transport]), configuration: Library.Configuration.forTests(attempts: 1))
    }

    /// Requests of every shape: all fields, none, text that JSON escapes, a network override
    /// allowing no kind at all.
    static let requests: [AssetRequest] = [
        AssetRequest(
            url: URL(string: "https://example.com/a%20b/issue.zip?x=1&y=\"2\"")!, headers: ["X-Token": "t/1", "Accept": "*/*"],
            sha256: String(repeating: "ab", count: 32), priority: 7, destinationPath: "pages/é \"1\".pdf",
            options: ["ca_file": "/etc/ca.pem", "insecure": "false"], maxBytesPerSecond: 123_456,
            network: NetworkPolicyOverride(allowedKinds: [.wifi, .wired], allowsExpensive: false, allowsRoaming: true),
            unpack: .zip, role: .cover),
        AssetRequest(url: URL(fileURLWithPath: "/srv/feed/plain.bin")),
        AssetRequest(url: URL(string: "sftp://host:2222/x")!, priority: -3,
                     network: NetworkPolicyOverride(allowedKinds: [], allowsConstrained: true)),
    ]

    /// A library as today's main wrote it: migrations v1 and v2 only, each request as the JSON
    /// text `JSONEncoder` writes with sorted keys, plus a damaged one.
    func writeOldLibrary() throws -> [String] {
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        let queue = try DatabaseQueue(path: database.path)
        try queue.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA journal_mode = WAL") }
        try Migrations.migrator.migrate(queue, upTo: "v2-checkpoint-boot")
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        var ids: [String] = []
        try queue.write { db in
            try db.execute(sql: "INSERT INTO issue (name, date, addedAt, isNew) VALUES ('i', '2026-11-21 00:00:00.000', '2026-11-21 00:00:00.000', 0)")
            for (index, request) in Self.requests.enumerated() {
                let id = "asset-\(index)"
                ids.append(id)
                try db.execute(sql: """
                    INSERT INTO asset (id, issueName, seq, request, userInfo, state, detail, retryAt, attempts, bytesOnDisk,
                      expectedBytes, validator, validatorStrength, checkpointBoot)
                    VALUES (?, 'i', ?, ?, ?, 'paused', NULL, NULL, ?, ?, ?, 'etag-\(index)', 'strong', 'boot-1')
                    """, arguments: [id, index + 1, String(decoding: try encoder.encode(request), as: UTF8.self),
                                     Data("{\"n\":\(index)}".utf8), index, index * 10, index * 100 + 5])
            }
            try db.execute(sql: """
                INSERT INTO asset (id, issueName, seq, request, state) VALUES ('damaged', 'i', 9, '{"url": 42', 'idle')
                """)
        }
        try queue.close()
        return ids
    }

    @Test func everyFieldOfARequestStoredAsJSONSurvivesTheMigration() async throws {
        let ids = try writeOldLibrary()
        var configuration = Library.Configuration.forTests()
        configuration.resumesOnOpen = false
        let library = try Library.open(at: root, transports: TransportRegistry([InMemoryTransport()]), configuration: configuration)
        let columns = try await library.scheduler.store.pool.read { db in try db.columns(in: "asset").map(\.name) }
        #expect(!columns.contains("request"))
        for (index, id) in ids.enumerated() {
            let record = try #require(library.scheduler.store.asset(id: id))
            #expect(record.request == Self.requests[index], "asset \(index)")
            #expect(record.requestFailure == nil)
            #expect(record.seq == Int64(index + 1))
            #expect(record.userInfo == Data("{\"n\":\(index)}".utf8))
            #expect(record.state == "paused")
            #expect(record.attempts == index)
            #expect(record.expectedBytes == Int64(index * 100 + 5))
            #expect(record.resourceValidator == ResourceValidator("etag-\(index)", strength: .strong))
            #expect(record.checkpointBoot == "boot-1")
        }
        let damaged = try #require(library.scheduler.store.asset(id: "damaged"))
        #expect(damaged.request.url == AssetRecord.unreadableURL)
        guard case .failed(let message)? = try await library.asset(identifier: "damaged")?.state else {
            Issue.record("the damaged asset should be failed")
            return
        }
        #expect(message.contains("unreadable") && message.contains("damaged"), "\(message)")
        // The issue lists its assets in order, from the index the migration made.
        #expect(try await library.issue(named: "i")?.assets.map(\.identifier) == ids + ["damaged"])
        await library.close()
    }

    @Test func requestsAddedNowRoundTripThroughTheColumns() async throws {
        var library = try open()
        let issue = try await library.addIssue(name: "i", date: Date())
        let added = try await issue.addAssets(Self.requests.map { ($0, nil) })
        await library.close()
        library = try open()
        for (asset, request) in zip(added, Self.requests) {
            #expect(try await library.asset(identifier: asset.identifier)?.request == request)
        }
        await library.close()
    }

    @Test func aFailuresReasonSurvivesAReopen() async throws {
        let transport = InMemoryTransport()
        var library = try open(transport)
        let issue = try await library.addIssue(name: "i", date: Date())
        let missing = try await issue.addAsset(AssetRequest(url: URL(string: "mem://example/missing")!, destinationPath: "m"))
        try await missing.download()
        guard case .failed(let before) = try await missing.waitUntilFinished() else {
            Issue.record("the missing asset should fail")
            return
        }
        #expect(before.reason == .notFound)
        await library.close()

        library = try open(transport)
        let reopened = try #require(await library.asset(identifier: missing.identifier))
        guard case .failed(let after) = try await reopened.waitUntilFinished() else {
            Issue.record("the missing asset should still be failed")
            return
        }
        #expect(after.reason == .notFound)
        #expect(after.code == before.code)
        #expect(after.transportError?.code == .notFound)
        #expect(after.message == before.message)
        await library.close()
    }
}
