import Foundation
import PaperboyTestServers
import Testing

@Suite("Test server reaper")
struct ServerReaperTests {
    @Test func aTrackedServerIsStoppedAtExitAndAStoppedOneIsForgotten() throws {
        // Like a server, it handles SIGTERM itself (the test process may ignore it, and an ignored
        // signal stays ignored in a child).
        let process = try ChildProcess("/bin/sh", ["-c", "trap 'exit 3' TERM; while :; do sleep 0.05; done"])
        let pid = process.processIdentifier
        ServerReaper.track(pid)
        #expect(ServerReaper.tracked.contains(pid))
        ServerReaper.stop([pid])   // what the atexit handler does for every tracked server
        process.waitUntilExit()
        #expect(process.terminationReason == .exit && process.terminationStatus == 3)
        ServerReaper.untrack(pid)
        #expect(!ServerReaper.tracked.contains(pid))
    }
}
