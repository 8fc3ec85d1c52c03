import Foundation
import Paperboy
@testable import PaperboyDaemon
import PaperboyTesting
import Testing
@testable import paperboy

/// The library's own state files go through the one reader for outside JSON (a file in the
/// library folder can be changed): nested deeper than ``JSONReader/Limits/stateFile`` allows, each
/// is refused before it is decoded and handled as an unreadable file is, never a trap.
@Suite("State files through the JSON reader", .timeLimit(.minutes(1)))
struct StateFileJSONTests {
    let folder = TempFolder(prefix: "pbs")
    static let deep = String(repeating: "[", count: 20) + String(repeating: "]", count: 20)

    @Test func deepStateFilesAreRefusedAsUnreadableOnes() throws {
        let root = folder.file("lib")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        for name in ["daemon-claims.json", "daemon.json", "feed-schedule.json", "purged-issues.json"] {
            try Data(Self.deep.utf8).write(to: root.appendingPathComponent(name))
        }
        // The claims file is set aside, with the limit as its reason.
        let claims = ClaimsFile(libraryRoot: root).read()
        #expect(claims == .corrupt(keptAs: URL(fileURLWithPath: root.path + "/daemon-claims.json.corrupt-1"),
                                   reason: "JSON nested deeper than 16 levels at byte 16"))
        // The feed schedule is recomputed, saying why.
        let schedule = FeedSchedule.load(from: root.appendingPathComponent("feed-schedule.json"))
        #expect(schedule.schedule == FeedSchedule() && schedule.problem == "JSON nested deeper than 16 levels at byte 16")
        // No daemon is recorded, no issue was purged.
        #expect(DaemonRecord.running(in: root) == nil)
        #expect(PurgedIssues(root: root).names.isEmpty)
    }
}
