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

/// A test server counts as started only once it listens itself: another test's server that took
/// its port between the free-port check and the bind also accepts connections (a lighttpd test
/// once read an sshd's banner as HTTP/0.9 there).
@Suite("Test server ports", .timeLimit(.minutes(2)))
struct TestServerPortTests {
    @Test func aListenerIsThisProcessesOnlyWhenItHoldsTheSocket() async throws {
        // Close-on-exec: the child below must not inherit it.
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        try #require(listener >= 0)
        defer { close(listener) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, length) == 0 && getsockname(listener, $0, &length) == 0 }
        }
        try #require(bound && listen(listener, 1) == 0)
        let port = Int(UInt16(bigEndian: address.sin_port))
        // Found among many sockets too: /proc/net/tcp is then longer than a page.
        var others: [Int32] = []
        defer { for fd in others { close(fd) } }
        for _ in 0..<150 {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            var any = sockaddr_in()
            any.sin_family = sa_family_t(AF_INET)
            any.sin_addr.s_addr = inet_addr("127.0.0.1")
            let ok = withUnsafePointer(to: &any) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
            }
            try #require(fd >= 0 && ok && listen(fd, 1) == 0)
            others.append(fd)
        }
        // This process holds it; another process, which also sees it accept, does not.
        #expect(LoopbackWebServer.listens(pid: getpid(), port: port))
        let other = try ChildProcess("/bin/sleep", ["600"])
        defer { other.signal(SIGKILL) }
        #expect(!LoopbackWebServer.listens(pid: other.processIdentifier, port: port))
    }
}
