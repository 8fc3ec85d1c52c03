import Foundation
import Paperboy
import PaperboyHTTP
import PaperboyTestServers
import PaperboyTesting
import Testing

/// What an app branches on, with real failures: nginx's 404, a checksum mismatch, a refused
/// credential, a cancel; and what each leaves on disk.
@Suite("API edges over HTTP", .timeLimit(.minutes(2)))
struct APIEdgeTests {
    /// The test file, made once on a thread of its own: megabytes take a debug build tens of
    /// milliseconds, too long for the cooperative pool (and made by every test at once, even
    /// for a thread each).
    static let made = Task { try await offThePool { randomData(2 << 20 + 77) } }
    static func makeData() async throws -> Data { try await made.value }

    /// nginx serving `data` as `/file.bin`, or nil when it is not installed.
    func startNginx() async throws -> NginxServer? {
        let data = try await Self.makeData()
        return try await PaperboyHTTPTests.startNginx(files: ["file.bin": data])
    }

    struct Run {
        let library: Library
        let asset: AssetDownload
        let root: URL
        var partial: URL { root.appendingPathComponent(".partial/\(asset.identifier)") }
    }

    func open(_ url: URL, in folder: TempFolder, sha256: String? = nil, configuration: Library.Configuration = .forTests(attempts: 1)) async throws -> Run {
        let root = folder.file("library")
        let library = try Library.open(at: root, transports: TransportRegistry([HTTPTransport()]), configuration: configuration)
        let asset = try await library.addIssue(name: "issue", date: Date()).addAsset(AssetRequest(url: url, sha256: sha256))
        return Run(library: library, asset: asset, root: root)
    }

    /// Every event of `events` until the sequence ends.
    func collect(_ events: DownloadEvents) async -> [DownloadEvent] {
        var all: [DownloadEvent] = []
        for await event in events { all.append(event) }
        return all
    }

    func failure(_ events: [DownloadEvent]) -> LibraryError? {
        if case .failed(let error) = events.last { return error }
        return nil
    }

    @Test func nginxs404IsNotFoundAndLeavesNoPartialFile() async throws {
        guard let nginx = try await startNginx() else { return }
        defer { nginx.stop() }
        let folder = TempFolder()
        let run = try await open(nginx.url("/missing.bin"), in: folder)
        // Two observers of one download see the same failure, and `==` says so.
        async let first = collect(try await run.asset.events())
        async let second = collect(try await run.asset.events())
        let (a, b) = try await (first, second)
        let error = try #require(failure(a))
        #expect(a == b)
        #expect(error.reason == .notFound)
        #expect(error.isNotFound && !error.isAuthenticationFailure && !error.isCancelled)
        // The two-level answer still works.
        #expect(error.code == .transport)
        #expect(error.transportError?.code == .notFound)
        await run.library.waitUntilIdle()
        #expect(!FileManager.default.fileExists(atPath: run.partial.path), "an empty .partial file was left behind")
        #expect(run.asset.bytesOnDisk == 0)
        #expect(run.asset.totalBytesWritten == 0)
        await run.library.close()
    }

    @Test func aChecksumMismatchIsFlattenedAndKeepsNothing() async throws {
        guard let nginx = try await startNginx() else { return }
        defer { nginx.stop() }
        let folder = TempFolder()
        let run = try await open(nginx.url("/file.bin"), in: folder, sha256: String(repeating: "0", count: 64))
        let events = await collect(try await run.asset.events())
        let error = try #require(failure(events))
        #expect(error.reason == .checksumMismatch)
        #expect(error.isChecksumMismatch && !error.isNotFound)
        #expect(error.code == .checksumMismatch)
        await run.library.waitUntilIdle()
        #expect(!FileManager.default.fileExists(atPath: run.partial.path), "an empty .partial file was left behind")
        #expect(run.asset.bytesOnDisk == 0)
        // The mismatched bytes were discarded: nothing to resume from.
        #expect(run.asset.totalBytesWritten == 0)
        #expect(run.asset.issue?.status == .notDownloaded)
        await run.library.close()
    }

    @Test func aRefusedCredentialIsAnAuthenticationFailure() async throws {
        let data = try await Self.makeData()
        let server = try FaultServer { request in
            guard ServerAuth.isBasic(request, user: "reader", password: "s3cret") else {
                return ServerResponse(status: 401, headers: [("WWW-Authenticate", ServerAuth.basicChallenge(realm: "issues"))])
            }
            return .serving(data, for: request)
        }
        defer { server.stop() }
        var configuration = Library.Configuration.forTests(attempts: 1)
        configuration.credentials = OriginCredentials([
            .init(scope: URLScope(string: "http://127.0.0.1:\(server.port)/")!, credential: Credential(user: "reader", password: "wrong")),
        ])
        let folder = TempFolder()
        let run = try await open(server.url("/private.bin"), in: folder, configuration: configuration)
        let error = try #require(failure(await collect(run.asset.events())))
        #expect(error.reason == .authentication)
        #expect(error.isAuthenticationFailure && !error.isNotFound)
        #expect(error.transportError?.code == .authenticationFailed)
        #expect(!error.message.contains("wrong"), "the password leaked into \(error.message)")
        await run.library.waitUntilIdle()
        #expect(!FileManager.default.fileExists(atPath: run.partial.path))
        await run.library.close()
    }

    @Test func aCancelIsCancelledAndRemovesTheBytes() async throws {
        // The server sends 192 KiB and then nothing: the transfer is surely running when cancelled.
        let data = try await Self.makeData()
        let server = try FaultServer { request in .serving(data, for: request, fault: .stallAfter(192 * 1024)) }
        defer { server.stop() }
        let folder = TempFolder()
        let run = try await open(server.url("/stalls.bin"), in: folder, configuration: .forTests(attempts: 1, idleTimeout: .seconds(300)))
        let events = Task { await collect(try await run.asset.events()) }
        try await eventually("the 192 KiB before the stall on disk", seen: "\(run.asset.bytesOnDisk) bytes on disk") {
            run.asset.bytesOnDisk >= 192 * 1024
        }
        #expect(run.asset.bytesOnDisk == 192 * 1024, "the partial file holds the bytes so far")
        #expect(run.asset.totalBytesWritten == 192 * 1024)
        try await run.asset.cancel()
        let error = try #require(failure(await events.value))
        #expect(error.reason == .cancelled)
        #expect(error.isCancelled)
        #expect(error.code == .cancelled)
        #expect(run.asset.state == .cancelled)
        #expect(run.asset.bytesOnDisk == 0)
        #expect(run.asset.totalBytesWritten == 0)
        #expect(!FileManager.default.fileExists(atPath: run.partial.path))
        await run.library.close()
    }

    @Test func aDeliveredAssetCountsItsSizeButHoldsNothingInTheLibrary() async throws {
        let data = try await Self.makeData()
        guard let nginx = try await startNginx() else { return }
        defer { nginx.stop() }
        let folder = TempFolder()
        let root = folder.file("library")
        let library = try Library.open(at: root, transports: TransportRegistry([HTTPTransport()]), configuration: .forTests(attempts: 1))
        let asset = try await library.addIssue(name: "issue", date: Date())
            .addAsset(AssetRequest(url: nginx.url("/file.bin"), sha256: sha256Hex(data), destinationPath: "file.bin"))
        let events = await collect(try await asset.events())
        guard case .finished = events.last else {
            Testing.Issue.record("expected .finished, got \(String(describing: events.last))")
            return
        }
        await library.waitUntilIdle()
        #expect(asset.state == .delivered)
        #expect(asset.totalBytesWritten == Int64(data.count))
        #expect(asset.bytesOnDisk == 0)
        #expect(asset.issue?.status == .available)
        await library.close()
    }

    /// Without a default route the monitor reports `none`: a loopback source still downloads
    /// (by address and by the name `localhost`), a remote one waits for a network.
    @Test func loopbackSourcesDoNotWaitForANetwork() async throws {
        let data = try await Self.makeData()
        let server = try FaultServer { request in .serving(data, for: request) }
        defer { server.stop() }
        var configuration = Library.Configuration.forTests(attempts: 1)
        let monitor = FixedNetworkMonitor(NetworkStatus(kind: .none))
        configuration.networkMonitor = monitor
        let folder = TempFolder()
        let library = try Library.open(at: folder.file("library"), transports: TransportRegistry([HTTPTransport()]), configuration: configuration)
        let issue = try await library.addIssue(name: "issue", date: Date())
        let byAddress = try await issue.addAsset(AssetRequest(url: server.url("/a.bin"), destinationPath: "a.bin"))
        let byName = try await issue.addAsset(AssetRequest(url: server.url("/b.bin", host: "localhost"), destinationPath: "b.bin"))
        // TEST-NET-1 (RFC 5737): never reached, as it must wait.
        let remote = try await issue.addAsset(AssetRequest(url: URL(string: "http://192.0.2.1:\(server.port)/c.bin")!, destinationPath: "c.bin"))
        for asset in [byAddress, byName, remote] { try await asset.download() }
        await library.waitUntilIdle()
        #expect(byAddress.state == .delivered)
        #expect(byName.state == .delivered)
        #expect(remote.state == .waiting(.network))
        #expect(try Bytes(Data(contentsOf: issue.contentURL.appendingPathComponent("b.bin"))) == Bytes(data))
        #expect(server.requests.count == 2)
        await library.close()
    }
}
