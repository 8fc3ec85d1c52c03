import Foundation
import Paperboy
import PaperboyHTTP
import PaperboyTestServers
import PaperboyTesting
import Testing

/// One large file from its URL and its mirrors at once (`AssetRequest.mirrors`), against real
/// servers: both sources serve pieces of a byte-identical file; a mirror serving another file is
/// refused at its head and the file completes from the good one; a mirror that stalls is demoted
/// and its piece finished elsewhere, its bytes kept; the credential of the URL's origin never
/// reaches a mirror of another origin.
@Suite("One large HTTP file from several mirrors", .serialized, .timeLimit(.minutes(3)))
struct MirrorTests {
    let folder = TempFolder()
    /// Twice the split threshold (32 MiB).
    let size = 64 << 20

    /// nginx serving `data` at `/first-slow/big.bin`, the request without `Range` (the one that
    /// begins) slowed so that the other connections always get pieces, the file's time set so
    /// that two servers give the same ETag (nginx's is the time and the size).
    func nginx(serving data: Data, modified: Date) async throws -> NginxServer? {
        let location = "location ^~ /first-slow/ { if ($http_range = \"\") { set $limit_rate 8m; } }"
        guard let nginx = try await startNginx(files: ["first-slow/big.bin": data], locations: location) else { return nil }
        try FileManager.default.setAttributes([.modificationDate: modified],
                                              ofItemAtPath: nginx.documentRoot.appendingPathComponent("first-slow/big.bin").path)
        return nginx
    }

    /// Bytes nginx sent in answers to ranges (206), from its access log.
    func rangeBytes(_ nginx: NginxServer) -> Int {
        nginx.accessLog.filter { $0.hasPrefix("206 ") }.compactMap { $0.split(separator: " ").last.flatMap { Int($0) } }.reduce(0, +)
    }

    @Test func aFileCompletesFromTwoMirrorsWithBothServingBytes() async throws {
        let data = try await generated(size, seed: 431)
        let modified = Date(timeIntervalSince1970: 1_750_000_000)
        guard let main = try await nginx(serving: data, modified: modified) else { return }
        defer { main.stop() }
        guard let mirror = try await nginx(serving: data, modified: modified) else { return }
        defer { mirror.stop() }
        let delegate = try await downloadThroughLibrary(
            main.url("/first-slow/big.bin"), in: folder, configuration: Library.Configuration.split(connections: 4), sha256: sha256Hex(data),
            mirrors: [mirror.url("/first-slow/big.bin")])

        #expect(delegate.deliveredSHA256 == sha256Hex(data), "\(delegate.events.suffix(3))")
        // nginx logs a request the client ended early once it notices: waited for.
        try await eventually("both servers answered ranges with bytes", seen: "main \(main.accessLog), mirror \(mirror.accessLog)") {
            rangeBytes(mirror) > 0 && main.accessLog.contains { $0.hasPrefix("200 \"-\"") }
        }
        #expect(!mirror.accessLog.contains { $0.hasPrefix("200") }, "the mirror was only asked for ranges: \(mirror.accessLog)")
    }

    @Test func aMirrorServingAnotherFileIsRefusedAndTheFileCompletesFromTheGoodOne() async throws {
        let data = try await generated(size, seed: 432)
        let other = try await generated(size, seed: 433)
        // The same size, another time: another ETag, so If-Range gets the whole file (200).
        guard let main = try await nginx(serving: data, modified: Date(timeIntervalSince1970: 1_750_000_000)) else { return }
        defer { main.stop() }
        guard let mirror = try await nginx(serving: other, modified: Date(timeIntervalSince1970: 1_760_000_000)) else { return }
        defer { mirror.stop() }
        let delegate = try await downloadThroughLibrary(
            main.url("/first-slow/big.bin"), in: folder, configuration: Library.Configuration.split(connections: 4), sha256: sha256Hex(data),
            mirrors: [mirror.url("/first-slow/big.bin")])

        #expect(delegate.deliveredSHA256 == sha256Hex(data), "\(delegate.events.suffix(3))")
        #expect(delegate.failureCode == nil, "\(delegate.events.suffix(3))")
        try await eventually("the mirror was asked", seen: "\(mirror.accessLog)") { !mirror.accessLog.isEmpty }
        // Asked once by each of its connections, before the demotion reached them; never a 206.
        #expect(mirror.accessLog.allSatisfy { $0.hasPrefix("200 \"bytes=") }, "\(mirror.accessLog)")
        #expect(mirror.accessLog.count <= 2, "\(mirror.accessLog)")
    }

    @Test func aMirrorThatStallsIsDemotedAndItsBytesAreKept() async throws {
        let data = try await generated(40 << 20, seed: 434)
        // The request that begins gets 64 KiB every 10 ms (its 16 MiB piece takes 2.5 s or more),
        // ranges all it can send: the mirror's piece is written into before the first one ends.
        let main = try FaultServer { request in
            var response = ServerResponse.serving(data, for: request)
            if request.header("range") == nil { response.chunkDelay = 0.01 }
            return response
        }
        defer { main.stop() }
        // The same version (ETag "v1"): 1 MiB of each range, then silence.
        let mirror = try FaultServer { request in .serving(data, for: request, fault: .stallAfter(1 << 20)) }
        defer { mirror.stop() }
        let delegate = try await downloadThroughLibrary(
            main.url("/big.bin"), in: folder, configuration: Library.Configuration.split(connections: 2), sha256: sha256Hex(data),
            mirrors: [mirror.url("/big.bin")])

        #expect(delegate.deliveredSHA256 == sha256Hex(data), "\(delegate.events.suffix(3))")
        #expect(delegate.failureCode == nil, "\(delegate.events.suffix(3))")
        // The second connection's piece is the second of 16 MiB: the mirror was asked for it once.
        let piece = 16 << 20
        #expect(mirror.requests.map { $0.header("range") } == ["bytes=\(piece)-\(2 * piece - 1)"], "\(mirror.requests.map { $0.header("range") })")
        #expect(mirror.bodyBytesSent == 1 << 20)
        // What it sent was kept: nobody asked the main URL for that piece from its start again.
        let ranges = main.requests.compactMap { $0.header("range") }
        #expect(!ranges.contains { $0.hasPrefix("bytes=\(piece)-") }, "\(ranges)")
        #expect(!ranges.isEmpty, "the main URL finished the mirror's piece: \(ranges)")
    }

    @Test func aMirrorOfAnotherOriginNeverReceivesTheCredentialOfTheURL() async throws {
        let data = try await generated(40 << 20, seed: 435)
        let password = "mirror-pw-77a1"
        let main = try FaultServer { request in
            guard ServerAuth.isBasic(request, user: "alice", password: password) else {
                return ServerResponse(status: 401, headers: [("WWW-Authenticate", ServerAuth.basicChallenge(realm: "issues"))])
            }
            var response = ServerResponse.serving(data, for: request)
            // As above: the mirror's piece is asked for before the first request could reach it.
            if request.header("range") == nil { response.chunkDelay = 0.01 }
            return response
        }
        defer { main.stop() }
        let mirror = try FaultServer { request in .serving(data, for: request) }
        defer { mirror.stop() }
        var configuration = Library.Configuration.split(connections: 2)
        // The credential covers the main URL's whole origin (another port is another origin).
        let scope = try #require(URLScope(main.url("/")))
        configuration.credentials = OriginCredentials([.init(scope: scope, credential: Credential(user: "alice", password: password))])
        let delegate = try await downloadThroughLibrary(
            main.url("/big.bin"), in: folder, configuration: configuration, sha256: sha256Hex(data), mirrors: [mirror.url("/big.bin")])

        #expect(delegate.deliveredSHA256 == sha256Hex(data), "\(delegate.events.suffix(3))")
        #expect(main.requests.contains { $0.header("authorization") != nil }, "the main URL got its credential")
        #expect(!mirror.requests.isEmpty, "the mirror was asked for a piece")
        #expect(mirror.requests.allSatisfy { $0.header("authorization") == nil },
                "\(mirror.requests.map { $0.header("authorization") ?? "-" })")
    }
}
