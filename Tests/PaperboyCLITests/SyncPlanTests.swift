import Foundation
import Paperboy
import PaperboyConfig
import PaperboyTesting
import Synchronization
import Testing
@testable import paperboy

/// What a sync's plan adds to the library, and when the issue may become complete.
@Suite("a sync's plan", .timeLimit(.minutes(2)))
struct SyncPlanTests {
    let workspace = Workspace()

    /// An issue whose assets are added in several batches is complete (and new) only once they
    /// are all in the library: with a batch delivered before the next was added, the issue was
    /// marked new although its last asset then failed (seen through a daemon, whose client
    /// splits a large addition into several requests: `paperboy status` listed it "none  new").
    @Test func anIssueAddedInBatchesIsNotCompleteBeforeItsLastBatch() async throws {
        for name in ["a", "b"] { _ = workspace.write(Data("asset \(name)\n".utf8), to: "content/\(name).txt") }
        // c.txt is not there: the last batch's asset fails.
        let file = workspace.write("""
            [library]
            path = "lib"
            sync_to_disk = false
            [scheduler]
            retry_attempts = 1
            [[issues]]
            name = "i"
            date = 2026-11-26
              [[issues.assets]]
              url = "content/a.txt"
              [[issues.assets]]
              url = "content/b.txt"
              [[issues.assets]]
              url = "content/c.txt"
            """, to: "paperboy.toml")
        let config = try PaperboyConfiguration.load(contentsOf: file)
        let library = try Library.open(at: config.library.path, transports: Transports.registry(for: config),
                                       configuration: Library.Configuration(config))
        var plan = SyncPlan()
        plan.batchSize = 1
        // Each batch ends (its assets delivered or failed) before the next one is added.
        plan.afterBatch = {
            try? await eventually("the batch's transfers end") {
                let states: [AssetState] = try await library.issue(named: "i")?.assets().map { $0.state } ?? []
                return states.allSatisfy { state in
                    if case .failed = state { return true }
                    return state == .idle || state == .delivered
                }
            }
        }
        try await plan.add(config.issues[0], config: config, library: library)
        _ = try await library.waitUntilSettled(ofIssues: ["i"], includingNetworkWaits: false, retryWaitLimit: RetryWaitLimit?.none)
        let issue = try #require(try await library.issue(named: "i"))
        let states: [AssetState] = try await issue.assets().map { $0.state }
        #expect(states.filter { $0 == .delivered }.count == 2, "\(states)")
        #expect(try await issue.isNew() == false)
        #expect(try await issue.status() == .notDownloaded)
        await library.close()
    }

    /// The first batch of an issue is small, so its transfers start while the rest are added:
    /// adding a whole issue's rows first held every transfer of 1,000 small files back by
    /// 10 ms (docs/Benchmarks.md).
    @Test func theFirstBatchOfAnIssueIsSmall() async throws {
        let count = SyncPlan.firstBatchSize + 9
        var assets = ""
        for number in 0..<count {
            _ = workspace.write(Data("asset \(number)\n".utf8), to: "content/\(number).txt")
            assets += "  [[issues.assets]]\n  url = \"content/\(number).txt\"\n"
        }
        let file = workspace.write("""
            [library]
            path = "lib"
            sync_to_disk = false
            [[issues]]
            name = "i"
            date = 2026-11-26

            """ + assets, to: "paperboy.toml")
        let config = try PaperboyConfiguration.load(contentsOf: file)
        let library = try Library.open(at: config.library.path, transports: Transports.registry(for: config),
                                       configuration: Library.Configuration(config))
        let added = Mutex<[Int]>([])
        var plan = SyncPlan()
        plan.afterBatch = {
            let inLibrary = (try? await library.issue(named: "i")?.assets().count) ?? -1
            added.withLock { $0.append(inLibrary) }
        }
        try await plan.add(config.issues[0], config: config, library: library)
        // The first asset is added idle on its own (see above), then 32, then the rest.
        #expect(added.withLock { $0 } == [1 + SyncPlan.firstBatchSize, count])
        _ = try await library.waitUntilSettled(ofIssues: ["i"], includingNetworkWaits: false, retryWaitLimit: RetryWaitLimit?.none)
        let issue = try #require(try await library.issue(named: "i"))
        let states: [AssetState] = try await issue.assets().map { $0.state }
        #expect(states.filter { $0 == .delivered }.count == count, "\(states)")
        await library.close()
    }
}
