import Foundation
import GRDB
import Synchronization
import Testing
@testable import Paperboy
import PaperboyTesting

/// A failure is a value decided where it happens: the same `LibraryError` (code, reason, transport
/// code, message, retryable) in process, in a listing and after a relaunch; and a download
/// cancelled while it runs is told as `cancelled` to the library's events.
@Suite("Failures as values", .timeLimit(.minutes(2)))
struct FailureValueTests {
    let folder = TempFolder()
    let transport = InMemoryTransport()
    var root: URL { folder.file("lib") }

    func open() throws -> Library {
        try Library.open(at: root, transports: TransportRegistry([transport]), configuration: Library.Configuration.forTests())
    }

    /// The error `asset` ended with, or a recorded issue.
    func failure(of asset: AssetDownload, _ name: String) async throws -> LibraryError? {
        let outcome = try await asset.waitUntilFinished()
        guard case .failed(let error) = outcome else {
            Issue.record("\(name) should have failed, ended \(outcome)")
            return nil
        }
        return error
    }

    @Test func eachFailureIsTheSameValueInItsStatusAndAfterARelaunch() async throws {
        var library = try open()
        let issue = try await library.addIssue(name: "i", date: Date())
        var seen: [(ScriptedFailure, String, LibraryError)] = []
        for scripted in ScriptedFailure.all {
            let asset = try await issue.addAsset(scripted.request(on: transport))
            try await asset.download()
            guard let error = try await failure(of: asset, scripted.name) else { continue }
            #expect(scripted.matches(error), "\(scripted): \(error.code) \(error.reason) \(String(describing: error.transportCode)) \(error.isRetryable)")
            #expect(error.transportError?.code == scripted.transportCode, "\(scripted)")
            let status = try #require(try issue.assetStatuses.first { $0.identifier == asset.identifier })
            #expect(status.failure == error, "\(scripted)")
            seen.append((scripted, asset.identifier, error))
        }
        #expect(seen.count == ScriptedFailure.all.count)
        await library.close()

        library = try open()
        let reopened = try #require(await library.issue(named: "i"))
        for (scripted, id, before) in seen {
            let asset = try #require(await library.asset(identifier: id))
            guard let after = try await failure(of: asset, scripted.name) else { continue }
            #expect(after.code == before.code, "\(scripted)")
            #expect(after.reason == before.reason, "\(scripted)")
            #expect(after.transportCode == before.transportCode, "\(scripted)")
            #expect(after.message == before.message, "\(scripted)")
            #expect(after.isRetryable == before.isRetryable, "\(scripted)")
            #expect(after == before, "\(scripted)")
            #expect(after.transportError?.code == scripted.transportCode, "\(scripted)")
            #expect(try reopened.assetStatuses.first { $0.identifier == id }?.failure == before, "\(scripted)")
        }
        await library.close()
    }

    /// A library written before reasons were stored (migrations up to v3, a failure's codes and
    /// errno): its failures read with the reasons those codes gave.
    @Test func failuresRecordedBeforeReasonsWereStoredGetTheirReasonFromTheirCodes() async throws {
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        let queue = try DatabaseQueue(path: root.appendingPathComponent("library.sqlite").path)
        try await queue.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA journal_mode = WAL") }
        try Migrations.migrator.migrate(queue, upTo: "v3-request-columns")
        let rows: [(id: String, code: String, transport: String?, errno: Int32?)] = [
            ("gone", "transport", "not-found", nil), ("refused", "transport", "connection-failed", nil),
            ("full", "storage", nil, POSIXErrorCode.ENOSPC.rawValue), ("io", "storage", nil, POSIXErrorCode.EIO.rawValue),
            ("bad", "checksum-mismatch", nil, nil),
        ]
        try await queue.write { db in
            try db.execute(sql: "INSERT INTO issue (name, date, addedAt, isNew) VALUES ('i', '2026-11-21 00:00:00.000', '2026-11-21 00:00:00.000', 0)")
            for (seq, row) in rows.enumerated() {
                try db.execute(sql: """
                    INSERT INTO asset (id, issueName, seq, url, state, detail, failureCode, transportCode, failureErrno)
                    VALUES (?, 'i', ?, 'mem://example/x', 'failed', ?, ?, ?, ?)
                    """, arguments: [row.id, seq, "asset \(row.id) failed", row.code, row.transport, row.errno])
            }
        }
        try queue.close()
        let library = try open()
        let expected: [String: (LibraryError.Reason, Bool)] = [
            "gone": (.notFound, false), "refused": (.network, true), "full": (.noSpace, false), "io": (.other, false),
            "bad": (.checksumMismatch, false),
        ]
        for row in rows {
            let asset = try #require(await library.asset(identifier: row.id))
            guard let error = try await failure(of: asset, row.id) else { continue }
            #expect(error.reason == expected[row.id]?.0, "\(row.id)")
            #expect(error.isRetryable == expected[row.id]?.1, "\(row.id)")
            #expect(error.code.rawValue == row.code && error.transportCode?.rawValue == row.transport, "\(row.id)")
            #expect(error.message == "asset \(row.id) failed")
        }
        let columns = try await library.scheduler.store.pool.read { db in try db.columns(in: "asset").map(\.name) }
        #expect(!columns.contains("failureErrno"))
        #expect(columns.contains("failureReason") && columns.contains("failureRetryable"))
        await library.close()
    }

    @Test func aDownloadCancelledWhileItRunsIsToldAsCancelledToTheLibrarysEvents() async throws {
        let library = try open()
        let states = Mutex<[AssetState]>([])
        let events = try await library.events()
        let issue = try await library.addIssue(name: "i", date: Date())
        let url = transport.serve(randomData(256 * 1024), at: "slow.bin", script: [.stallAfter(64 * 1024)])
        let asset = try await issue.addAsset(AssetRequest(url: url, destinationPath: "slow.bin"))
        let listener = Task {
            for await event in events {
                guard case .assetStateChanged(let changed, let state) = event, changed == asset else { continue }
                states.withLock { $0.append(state) }
            }
        }
        defer { listener.cancel() }
        try await asset.download()
        try await eventually("the transfer to stall", seen: "\(asset.totalBytesWritten)") { asset.totalBytesWritten >= 64 * 1024 }
        try await asset.cancel()
        #expect(try await asset.waitUntilFinished() == .cancelled)
        try await eventually("the cancelled state among the events", seen: "\(states.withLock { $0 })") {
            states.withLock { $0.last == .cancelled }
        }
        #expect(states.withLock { $0 }.contains(.downloading))
        await library.close()
    }

    @Test func aFailureAndAPauseOfAnAssetThatLeavesMemoryAreToldToTheLibrarysEvents() async throws {
        let library = try open()
        let states = Mutex<[String: [AssetState]]>([:])
        let events = try await library.events()
        let listener = Task {
            for await event in events {
                guard case .assetStateChanged(let changed, let state) = event else { continue }
                states.withLock { $0[changed.identifier, default: []].append(state) }
            }
        }
        defer { listener.cancel() }
        let issue = try await library.addIssue(name: "i", date: Date())
        let missing = try await issue.addAsset(AssetRequest(url: URL(string: "mem://example/missing.bin")!))
        try await missing.download()
        guard let error = try await failure(of: missing, "missing.bin") else { return }
        try await eventually("the failed state among the events", seen: "\(states.withLock { $0 })") {
            states.withLock { $0[missing.identifier]?.last } == .failed(error.message)
        }
        let idle = try await issue.addAsset(AssetRequest(url: transport.serve(Data("x".utf8), at: "x.bin")))
        try await idle.pause()
        try await eventually("the paused state among the events", seen: "\(states.withLock { $0 })") {
            states.withLock { $0[idle.identifier]?.last } == .waiting(.pausedByApp)
        }
        await library.close()
    }
}
