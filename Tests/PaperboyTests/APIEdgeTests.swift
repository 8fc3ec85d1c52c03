import Foundation
import Testing
@testable import Paperboy
import PaperboyTesting

/// The flattened error reasons, `==` on the public value types, the renamed issue status, and
/// sources that need no network.
@Suite("API edges", .timeLimit(.minutes(2)))
struct APIEdgeTests {
    @Test func transportCodesFlattenToReasons() {
        let expected: [(TransportError.Code, LibraryError.Reason)] = [
            (.notFound, .notFound), (.authenticationFailed, .authentication), (.accessDenied, .accessDenied),
            (.insufficientStorage, .noSpace), (.cancelled, .cancelled), (.connectionFailed, .network),
            (.connectionLost, .network), (.timedOut, .network), (.serverError, .other), (.badURL, .other),
        ]
        for (code, reason) in expected {
            let error = LibraryError(TransportError(code, "x", url: URL(string: "https://example.com/a.pdf")))
            #expect(error.reason == reason, "\(code)")
            #expect(error.code == .transport, "the two-level code stays")
            #expect(error.transportError?.code == code)
        }
        #expect(LibraryError(.checksumMismatch, "x").reason == .checksumMismatch)
        #expect(LibraryError(.cancelled, "x").reason == .cancelled)
        #expect(LibraryError(.cancelled, "x").isCancelled)
        // An asset unknown to the library is not a source's 404.
        #expect(LibraryError(.assetNotFound, "x").reason == .other)
        #expect(!LibraryError(.issueNotFound, "x").isNotFound)
        #expect(LibraryError(.storage, "disk said no", underlying: SendableError(MarkerError())).reason == .other)
    }

    @Test func aFullFileSystemIsNoSpaceWhateverTheLayer() throws {
        #expect(LibraryError(TransportError(.insufficientStorage, "full")).isNoSpace)
        #expect(LibraryError(.storage, "full", underlying: POSIXError(.ENOSPC)).isNoSpace)
        #expect(LibraryError(.storage, "quota", underlying: POSIXError(.EDQUOT)).reason == .noSpace)
        #expect(LibraryError(.storage, "io", underlying: POSIXError(.EIO)).reason == .other)
        // An archive declaring more than is free, checked before a byte is written.
        let folder = TempFolder()
        let archive = folder.file("issue.zip")
        try Data("zip".utf8).write(to: archive)
        let limits = Unpacker.Limits(maxBytes: .max, maxRatio: .max)
        let space = FreeSpaceGuard(root: folder.url, floor: .default)
        #expect {
            try Unpacker.checkSize(.max / 2, of: archive, named: "mem://example/issue.zip", in: folder.url, limits: limits, space: space)
        } throws: { error in
            guard let error = error as? LibraryError else { return false }
            return error.code == .insufficientStorage && error.reason == .noSpace && error.message.contains("not enough space for archive mem://")
        }
    }

    @Test func errorsCompareWithEquals() {
        let url = URL(string: "https://example.com/a.pdf")
        let notFound = TransportError(.notFound, "HTTP 404", url: url)
        #expect(LibraryError(notFound) == LibraryError(notFound))
        #expect(LibraryError(notFound) != LibraryError(TransportError(.notFound, "HTTP 404", url: URL(string: "https://example.com/b.pdf"))))
        #expect(LibraryError(notFound) != LibraryError(TransportError(.notFound, "HTTP 410", url: url)))
        var retryable = LibraryError(notFound)
        retryable.isRetryable = true
        #expect(retryable != LibraryError(notFound))
        #expect(LibraryError(.cancelled, "cancelled") == LibraryError(.cancelled, "cancelled"))
        #expect(LibraryError(.cancelled, "cancelled") != LibraryError(.storage, "cancelled"))
        // The underlying error is diagnostics: what it decided (the reason) counts, not itself.
        #expect(LibraryError(.storage, "full", underlying: POSIXError(.ENOSPC)) == LibraryError(.storage, "full", underlying: POSIXError(.ENOSPC)))
        #expect(LibraryError(.storage, "full", underlying: POSIXError(.ENOSPC)) == LibraryError(.storage, "full", underlying: POSIXError(.EDQUOT)))
        #expect(LibraryError(.storage, "full", underlying: POSIXError(.ENOSPC)) != LibraryError(.storage, "full"))
        #expect(LibraryError(.storage, "full", underlying: POSIXError(.ENOSPC))
                == LibraryError(.storage, "full", isRetryable: false, reason: .noSpace, transportCode: nil))
        #expect(TransportError(.rateLimited, "429", retryAfter: .seconds(1)) != TransportError(.rateLimited, "429", retryAfter: .seconds(2)))
    }

    @Test func eventsAndChallengesCompareWithEquals() {
        let file = URL(fileURLWithPath: "/tmp/a.pdf")
        #expect(DownloadEvent.progress(bytesWritten: 1, totalBytesWritten: 2, expectedTotalBytes: nil)
                == .progress(bytesWritten: 1, totalBytesWritten: 2, expectedTotalBytes: nil))
        #expect(DownloadEvent.progress(bytesWritten: 1, totalBytesWritten: 2, expectedTotalBytes: 3)
                != .progress(bytesWritten: 1, totalBytesWritten: 2, expectedTotalBytes: nil))
        #expect(DownloadEvent.finished(file) == .finished(file))
        #expect(DownloadEvent.finished(file) != .resumed(totalBytesWritten: 0, expectedTotalBytes: nil))
        #expect(DownloadEvent.failed(LibraryError(.cancelled, "c")) == .failed(LibraryError(.cancelled, "c")))
        let challenge = AuthChallenge(kind: .httpBasic, url: URL(string: "https://example.com/a.pdf")!, realm: "issues")
        #expect(challenge == AuthChallenge(kind: .httpBasic, url: URL(string: "https://example.com/a.pdf")!, realm: "issues"))
        #expect(challenge != AuthChallenge(kind: .httpDigest, url: URL(string: "https://example.com/a.pdf")!, realm: "issues"))
        #expect(AuthChallengeDisposition.useCredential(Credential(user: "u", password: "p")) == .useCredential(Credential(user: "u", password: "p")))
        #expect(AuthChallengeDisposition.useCredential(Credential(user: "u", password: "p")) != .useCredential(Credential(user: "u", password: "q")))
    }

    @Test func libraryEventsCompareWithEquals() async throws {
        let folder = TempFolder()
        let library = try Library.open(at: folder.file("lib"), transports: TransportRegistry([InMemoryTransport()]), configuration: Library.Configuration.forTests())
        let issue = try await library.addIssue(name: "i", date: Date())
        let asset = try await issue.addAsset(AssetRequest(url: URL(string: "mem://example/a")!))
        #expect(LibraryEvent.issueDownloadCompleted(issue) == .issueDownloadCompleted(try #require(await library.issue(named: "i"))))
        #expect(LibraryEvent.assetStateChanged(asset, .idle) == .assetStateChanged(asset, .idle))
        #expect(LibraryEvent.assetStateChanged(asset, .idle) != .assetStateChanged(asset, .downloading))
        await library.close()
    }

    @Test func anIssueWithNothingDownloadedIsNotDownloadedNotNil() async throws {
        let folder = TempFolder()
        let library = try Library.open(at: folder.file("lib"), transports: TransportRegistry([InMemoryTransport()]), configuration: Library.Configuration.forTests())
        let asset = try await library.addIssue(name: "i", date: Date()).addAsset(AssetRequest(url: URL(string: "mem://example/a")!))
        // Through an optional, as apps write it: `.none` used to be Optional.none here.
        #expect(asset.issue?.status == .notDownloaded)
        #expect(asset.issue?.status != nil)
        // Printed and encoded as before.
        #expect(Issue.Status.notDownloaded.rawValue == "none")
        #expect("\(Issue.Status.notDownloaded)" == "none")
        #expect("\(Issue.Status.available)" == "available")
        await library.close()
    }

    @Test func sourcesThatNeedNoNetwork() {
        let local = [
            "http://127.0.0.1:8080/a", "http://127.1.2.3/a", "http://localhost/a", "http://LOCALHOST./a", "https://cdn.localhost/a",
            "http://[::1]:8080/a", "http://[fe80::1]/a", "http://[fe80::1%25eth0]/a", "http://[febf::1]/a", "http://169.254.10.20/a",
            "http://[::ffff:127.0.0.1]/a", "sftp://127.0.0.1:2222/issues/a.pdf", "file:///tmp/a.pdf",
        ]
        let remote = [
            "http://10.0.0.1/a", "http://192.168.1.2/a", "http://8.8.8.8/a", "http://example.com/a", "http://localhost.example.com/a",
            "http://[fec0::1]/a", "http://[2001:db8::1]/a", "http://169.255.0.1/a", "http://128.0.0.1/a", "http://[::ffff:8.8.8.8]/a",
            "http://[::2]/a", "mem://example/a",
        ]
        for text in local { #expect(NetworkPolicy.isLocalSource(URL(string: text)!), "\(text)") }
        for text in remote { #expect(!NetworkPolicy.isLocalSource(URL(string: text)!), "\(text)") }
    }

    /// With no default route (kind `none`), an asset from a loopback host transfers and one from
    /// a remote host waits; when the network goes away mid-transfer, the loopback one goes on.
    @Test func withoutADefaultRouteLoopbackSourcesStillDownload() async throws {
        let folder = TempFolder()
        let data = randomData(256 * 1024)
        let transport = InMemoryTransport()
        let local = transport.serve(data, at: "local.bin", host: "127.0.0.1")
        let remote = transport.serve(data, at: "remote.bin", host: "example")
        let monitor = FixedNetworkMonitor(NetworkStatus(kind: .none))
        var configuration = Library.Configuration.forTests()
        configuration.networkMonitor = monitor
        configuration.mode = .background
        let library = try Library.open(at: folder.file("lib"), transports: TransportRegistry([transport]), configuration: configuration)
        let issue = try await library.addIssue(name: "i", date: Date())
        let localAsset = try await issue.addAsset(AssetRequest(url: local, destinationPath: "local.bin"))
        let remoteAsset = try await issue.addAsset(AssetRequest(url: remote, destinationPath: "remote.bin"))
        try await localAsset.download()
        try await remoteAsset.download()
        await library.waitUntilIdle()
        #expect(localAsset.state == .delivered)
        #expect(remoteAsset.state == .waiting(.network))
        #expect(transport.jobs.map(\.url) == [local])
        // An expensive cellular network in the background: still not for the remote one.
        monitor.set(NetworkStatus(kind: .cellular, isExpensive: true))
        await library.waitUntilIdle()
        #expect(remoteAsset.state == .waiting(.network))
        monitor.set(NetworkStatus(kind: .wired))
        try await eventually("the remote asset delivered") { remoteAsset.state == .delivered }
        await library.close()
    }
}

private struct MarkerError: Error {}
