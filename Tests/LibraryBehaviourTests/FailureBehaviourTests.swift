import Foundation
import Paperboy
import PaperboyTestServers
import PaperboyTesting
import Testing

/// Errors by `reason`: each failure is one value (code, reason, transport code, retryable,
/// message) in the wait, the status, the delegate and after a reopen; real sources (a missing
/// file, an HTTP 404, a full file system) and retries on the test clock.
@Suite("Library behaviour: errors by reason", .timeLimit(.minutes(3)))
struct FailureBehaviourTests {
    /// HTTP 404, 401, 403, a checksum mismatch, a full disk, a refused connection, scripted.
    @Test(arguments: Backends.all, ScriptedFailure.all)
    func eachFailureIsOneValueInTheWaitTheStatusAndTheDelegate(backend: any BackendFactory, failure: ScriptedFailure) async throws {
        let home = BehaviourHome(backend)
        try await home.with { library in
            let asset = try await library.addIssue(name: "i", date: Date()).addAsset(failure.request(on: home.memory))
            let delegate = RecordingDelegate()
            try await asset.download(delegate: delegate)
            guard case .failed(let error) = try await asset.waitUntilFinished() else {
                Testing.Issue.record("\(failure): not a failure")
                return
            }
            #expect(failure.matches(error), "\(failure): \(error.code) \(error.reason) \(String(describing: error.transportCode)) \(error.isRetryable)")
            let status = try await asset.status()
            #expect(status.failure == error, "\(failure)")
            #expect(status.state == .failed(error.message), "\(failure): \(status.state)")
            await delegate.waitForEnd()
            #expect(delegate.failures == [error], "\(failure): \(delegate.events)")
            let destination = try #require(try await asset.issue()).contentURL.appendingPathComponent(failure.name)
            #expect(!FileManager.default.fileExists(atPath: destination.path), "\(failure): nothing delivered")
        }
    }

    /// Closed and opened again, the library tells the same failure, message included.
    @Test(arguments: Backends.all, ScriptedFailure.all)
    func eachFailureIsTheSameValueAfterAReopen(backend: any BackendFactory, failure: ScriptedFailure) async throws {
        let home = BehaviourHome(backend)
        let first = try await home.open()
        let asset = try await first.library.addIssue(name: "i", date: Date()).addAsset(failure.request(on: home.memory))
        try await asset.download()
        guard case .failed(let error) = try await asset.waitUntilFinished() else {
            Testing.Issue.record("\(failure): not a failure")
            await first.close()
            return
        }
        let second = try await first.reopen()
        let again = try #require(try await second.library.asset(identifier: asset.identifier), "\(failure)")
        #expect(try await again.status().failure == error, "\(failure)")
        #expect(try await again.waitUntilFinished() == .failed(error), "\(failure)")
        await second.close()
    }

    @Test(arguments: Backends.all)
    func aMissingLocalFileIsNotFound(backend: any BackendFactory) async throws {
        let home = BehaviourHome(backend)
        try await home.with { library in
            let missing = home.folder.file("missing.bin")
            let asset = try await library.addIssue(name: "i", date: Date()).addAsset(AssetRequest(url: missing))
            try await asset.download()
            guard case .failed(let error) = try await asset.waitUntilFinished() else {
                Testing.Issue.record("not a failure")
                return
            }
            #expect(error.reason == .notFound && error.transportCode == .notFound && !error.isRetryable, "\(error)")
            #expect(error.message.contains(missing.path), "the message names the file: \(error.message)")
        }
    }

    /// A 404 from a loopback server: `.notFound` in process and through the daemon (it was
    /// `.other` through the daemon, derived from an error type the wire cannot carry).
    @Test(arguments: Backends.all)
    func anHTTP404IsNotFound(backend: any BackendFactory) async throws {
        let server = try FaultServer { _ in ServerResponse(status: 404) }
        defer { server.stop() }
        let home = BehaviourHome(backend)
        try await home.with { library in
            let asset = try await library.addIssue(name: "i", date: Date()).addAsset(AssetRequest(url: server.url("/gone.pdf")))
            try await asset.download()
            guard case .failed(let error) = try await asset.waitUntilFinished() else {
                Testing.Issue.record("not a failure")
                return
            }
            #expect(error.reason == .notFound && error.code == .transport && error.transportCode == .notFound, "\(error)")
            #expect(error.message.contains("/gone.pdf"), "\(error.message)")
        }
    }

    /// A free-space floor above what the file system has: `.noSpace` before a byte is written.
    @Test(arguments: Backends.all)
    func aFileSystemWithoutRoomFailsWithNoSpace(backend: any BackendFactory) async throws {
        let home = BehaviourHome(backend)
        try await home.with({ $0.minFreeSpace = .percent(100) }) { library in
            let asset = try await library.addIssue(name: "i", date: Date())
                .addAsset(AssetRequest(url: home.memory.serve(try await payload(100_000), at: "a.bin")))
            let delegate = RecordingDelegate()
            try await asset.download(delegate: delegate)
            guard case .failed(let error) = try await asset.waitUntilFinished() else {
                Testing.Issue.record("not a failure")
                return
            }
            #expect(error.reason == .noSpace && error.code == .insufficientStorage && !error.isRetryable, "\(error)")
            #expect(try await asset.status().totalBytesWritten == 0)
            await delegate.waitForEnd()
            #expect(delegate.failures == [error])
        }
    }

    /// A retryable failure waits for its retry, timed on the library's clock, then succeeds.
    @Test(arguments: Backends.all)
    func aRetryableFailureIsTriedAgainWhenTheClockSaysSo(backend: any BackendFactory) async throws {
        let clock = TestClock()
        let home = BehaviourHome(backend)
        let data = try await payload(100_000)
        try await home.with(attempts: 3, clock: clock) { library in
            let refused = TransportError(.connectionFailed, "connection refused", url: URL(string: "mem://example/flaky.bin"))
            let url = home.memory.serve(data, at: "flaky.bin", script: [.fail(refused)])
            let asset = try await library.addIssue(name: "i", date: Date()).addAsset(AssetRequest(url: url, destinationPath: "flaky.bin"))
            try await asset.download()
            try await asset.waitForStatus("waiting for its retry") { if case .waiting(.retry) = $0.state { true } else { false } }
            guard case .waiting(.retry(let until, let attempt)) = try await asset.status().state else { return }
            #expect(attempt == 2 && until > clock.now, "retry \(attempt) at \(until), now \(clock.now)")
            #expect(home.memory.jobs.count == 1, "no second attempt before the clock moves")
            try await clock.advance(until: "the second attempt") { home.memory.jobs.count == 2 }
            #expect(try await asset.waitUntilFinished() == .delivered)
            #expect(home.memory.jobs.count == 2)
        }
    }

    /// Attempts without progress are bounded: the last failure is the one told, with its reason.
    @Test(arguments: Backends.all)
    func retriesGiveUpAfterTheAttemptsAllowed(backend: any BackendFactory) async throws {
        let clock = TestClock()
        let home = BehaviourHome(backend)
        let unreachable = try #require(ScriptedFailure.all.first { $0.reason == .network })
        try await home.with(attempts: 3, clock: clock) { library in
            let asset = try await library.addIssue(name: "i", date: Date()).addAsset(unreachable.request(on: home.memory))
            try await asset.download()
            try await clock.advance(until: "the third attempt") { home.memory.jobs.count == 3 }
            guard case .failed(let error) = try await asset.waitUntilFinished() else {
                Testing.Issue.record("not a failure")
                return
            }
            #expect(unreachable.matches(error) && error.reason == .network, "\(error)")
            #expect(home.memory.jobs.count == 3)
            #expect(try await asset.status().attempts == 3)
        }
    }
}
