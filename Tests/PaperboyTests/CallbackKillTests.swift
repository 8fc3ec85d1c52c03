import Foundation
import PaperboyTestServers
import PaperboyTesting
import Testing
@testable import Paperboy

/// At least once, when the app dies inside `didFinishDownloadingTo`: a real app process
/// (`CallbackKillApp`) is killed with SIGKILL inside the callback, then the library is reopened
/// and the README's relaunch loop must get the file.
@Suite("Killed inside didFinish")
struct CallbackKillTests {
    let folder = TempFolder()

    static var app: URL { BuiltExecutable.url(named: "CallbackKillApp") }

    /// Runs the app on `library` and kills it `delay` microseconds after its `didFinish` began
    /// (0: at once). Returns whether the callback was reached.
    func runKilledInsideCallback(library: URL, source: URL, delay: useconds_t) async throws -> Bool {
        var pipeFDs: [Int32] = [0, 0]
        guard pipe(&pipeFDs) == 0 else { throw ServerError("pipe: \(String(cString: strerror(errno)))") }
        for fd in pipeFDs { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        let process: ChildProcess
        do {
            defer { close(pipeFDs[1]) }
            process = try ChildProcess(Self.app.path, [library.path, source.path], standardOutput: pipeFDs[1])
        } catch {
            close(pipeFDs[0])
            throw error
        }
        let readEnd = pipeFDs[0]
        // On a thread of its own: the kill follows the byte by microseconds, whatever the pool does.
        let reached = await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            Thread {
                var poller = pollfd(fd: readEnd, events: Int16(POLLIN), revents: 0)
                var byte: UInt8 = 0
                let reached = poll(&poller, 1, 30_000) == 1 && read(readEnd, &byte, 1) == 1
                if reached, delay > 0 { usleep(delay) }
                process.signal(SIGKILL)
                continuation.resume(returning: reached)
            }.start()
        }
        await process.exited()
        close(readEnd)
        return reached
    }

    @Test func aFileFinishedWhenTheAppDiesInsideDidFinishIsDeliveredOnRelaunch() async throws {
        let data = randomData(300_000)
        let source = folder.file("source.bin")
        try data.write(to: source)
        for delay: useconds_t in [0, 0, 1_000, 5_000, 20_000, 80_000] {
            let root = folder.file("library-\(delay)-\(UUID().uuidString.prefix(4))")
            let reached = try await runKilledInsideCallback(library: root, source: source, delay: delay)
            try #require(reached, "the app never reached didFinish (delay \(delay) µs)")

            // The relaunch, as README's Embedding section writes it.
            let library = try Library.open(at: root, transports: TransportRegistry([InMemoryTransport()]), configuration: testConfiguration())
            let pending = library.downloadingAssets
            #expect(pending.count == 1, "kill \(delay) µs into didFinish: \(pending.count) assets listed")
            #expect(pending.first?.state == .finished, "kill \(delay) µs into didFinish: \(String(describing: pending.first?.state))")
            #expect(pending.first?.totalBytesWritten == Int64(data.count))
            let delegate = RecordingDelegate()
            for asset in library.downloadingAssets { asset.download(delegate: delegate) }
            if let asset = pending.first {
                let outcome = try await asset.waitUntilFinished()
                if case .delivered = outcome {} else { Testing.Issue.record("kill \(delay) µs into didFinish: \(outcome)") }
            }
            #expect(delegate.keptFiles == [data], "kill \(delay) µs into didFinish")
            await library.close()
        }
    }
}
