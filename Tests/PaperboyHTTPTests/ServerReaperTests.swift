#if canImport(Glibc)
import Glibc
#endif
import Foundation
import PaperboyTestServers
import Testing

@Suite("Test server reaper", .timeLimit(.minutes(2)))
struct ServerReaperTests {
    @Test func aTrackedServerIsStoppedAtExitAndAStoppedOneIsForgotten() async throws {
        // Like a server, it handles SIGTERM itself (the test process may ignore it, and an ignored
        // signal stays ignored in a child); it says when its trap is set.
        var output: [Int32] = [-1, -1]
        try #require(pipe(&output) == 0)
        let process = try ChildProcess("/bin/sh", ["-c", "trap 'exit 3' TERM; echo armed; while :; do sleep 0.05; done"],
                                       standardOutput: output[1])
        close(output[1])
        let reader = FileHandle(fileDescriptor: output[0], closeOnDealloc: true)
        let said = try await offThePool { String(decoding: reader.availableData, as: UTF8.self) }
        #expect(said == "armed\n")
        let pid = process.processIdentifier
        ServerReaper.track(pid)
        #expect(ServerReaper.tracked.contains(pid))
        ServerReaper.stop([pid])   // what the atexit handler does for every tracked server
        await process.exited()
        #expect(process.terminationReason == .exit && process.terminationStatus == 3)
        ServerReaper.untrack(pid)
        #expect(!ServerReaper.tracked.contains(pid))
    }
}
