#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import Foundation
import Paperboy
import PaperboyWire
import PaperboyClient
import PaperboyDaemon
import PaperboyFraming
import PaperboyTestServers
import PaperboyTesting
import Synchronization
import Testing

/// `PaperboyClient` against a daemon that answers `HELLO` and then stops reading: its requests
/// fill the socket, and nothing else of the app may stop with them.
@Suite("PaperboyClient: a daemon that stops reading", .serialized, .timeLimit(.minutes(2)))
struct PaperboyClientWriteTests {
    let workspace = Workspace()

    /// Accepts one connection, answers its `HELLO`, then reads nothing more; `release()` closes it.
    final class DeafDaemon: Sendable {
        let socket: URL
        private let listener: Int32
        private let connection = Mutex<Int32>(-1)

        init(socket: URL, answersHello: Bool = true) throws {
            self.socket = socket
            listener = try DaemonSocket.listen(at: socket)
            Thread { [self] in
                let fd = accept(listener, nil, nil)
                guard fd >= 0 else { return }
                connection.withLock { $0 = fd }
                var reader = FrameReader()
                guard answersHello, (try? reader.next(from: fd, maxLength: { _ in 1 << 20 }, wait: { _ in })) != nil else { return }
                let hello = Frame.encode("HELLO", Data(#"{"protocol":1,"paperboy":"0.1.0","library":"/nowhere"}"#.utf8))
                try? FrameWriter.write(hello, to: fd, isSocket: true)
            }.start()
        }

        /// The bytes the client sent that wait in the connection, unread.
        var queuedBytes: Int {
            let fd = connection.withLock { $0 }
            var count: Int32 = 0
            guard fd >= 0, ioctl(fd, UInt(FIONREAD), &count) == 0 else { return 0 }
            return Int(count)
        }

        func release() {
            let fd = connection.withLock { fd -> Int32 in
                defer { fd = -1 }
                return fd
            }
            if fd >= 0 { close(fd) }
            close(listener)
        }
    }

    @Test func aDaemonThatNeverAnswersHelloFailsTheConnectionAfterTenSeconds() async throws {
        let runtime = workspace.path("runtime")
        mkdir(runtime.path, 0o700)
        let daemon = try DeafDaemon(socket: runtime.appendingPathComponent("mute.sock"), answersHello: false)
        defer { daemon.release() }
        let clock = TestClock()
        let connecting = Task { try await Library.connect(socket: daemon.socket, clock: clock) }
        // HELLO is sent; the wait for the answer is the one timer.
        try await clock.waitForSleepers(1)
        #expect(clock.pendingSleeps == [.seconds(10)])
        clock.advance(by: .seconds(10) - .milliseconds(1))
        #expect(clock.pendingSleeps == [.milliseconds(1)], "the HELLO timeout fired early")
        clock.advance(by: .milliseconds(1))
        let result = await connecting.result
        guard case .failure(let error as LibraryError) = result else {
            Issue.record("expected a LibraryError, got \(result)")
            return
        }
        #expect(error.code == .transport)
        #expect(error.message.contains("did not answer HELLO within 10.0 seconds"), "\(error.message)")
    }

    @Test func requestsStuckInAFullSocketDoNotWedgeTheAppsOtherTasks() async throws {
        let runtime = workspace.path("runtime")
        mkdir(runtime.path, 0o700)
        let daemon = try DeafDaemon(socket: runtime.appendingPathComponent("deaf.sock"))
        defer { daemon.release() }
        let client = try await Library.connect(socket: daemon.socket)
        // With the old blocking writes, the pool's threads block in write(2) and nothing below
        // runs: a watchdog thread then closes the daemon's end so that the test ends, failing.
        let wedged = Mutex(false)
        let done = DispatchSemaphore(value: 0)
        Thread {
            if done.wait(timeout: .now() + 60) == .timedOut {
                wedged.withLock { $0 = true }
                daemon.release()
            }
        }.start()
        // About 3 MB of requests: far more than a Unix socket buffers.
        let name = String(repeating: "n", count: 200_000)
        let requests = (0..<16).map { index in
            Task { () -> LibraryError? in
                do throws(LibraryError) {
                    _ = try await client.addIssue(name: "\(name)\(index)", date: Date())
                    return nil
                } catch {
                    return error
                }
            }
        }
        // The socket fills: the requests cannot all fit (a Unix socket holds about 200 kB), so
        // the client's writer is blocked in write(2) from here on.
        try await eventually("the requests to fill the daemon's socket", seen: "\(daemon.queuedBytes) bytes queued") {
            daemon.queuedBytes >= 64 * 1024
        }
        // Other work on the cooperative pool goes on (were the pool held, this would never end:
        // the suite's time limit, no wall-clock bound).
        let sums = await withTaskGroup(of: Int.self) { group in
            for index in 0..<8 { group.addTask { (0...1000).reduce(index, +) } }
            return await group.reduce(0, +)
        }
        #expect(sums == 8 * 500_500 + 28)
        // Disconnecting ends every stuck request with an error (else they wait for ever).
        client.disconnect()
        var errors: [LibraryError] = []
        for request in requests { if let error = await request.value { errors.append(error) } }
        done.signal()
        #expect(!wedged.withLock { $0 }, "the client's blocking writes wedged the cooperative pool")
        #expect(errors.count == requests.count)
        #expect(errors.allSatisfy { $0.code == .transport })
    }
}
