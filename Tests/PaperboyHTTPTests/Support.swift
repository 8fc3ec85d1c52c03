import Foundation
import Paperboy
import PaperboyHTTP
import PaperboyTestServers
import PaperboyTesting
import Synchronization
import Testing

/// nginx started for a test with `files` in its document root, or nil (the test skips) when it is
/// not installed; under `CI=true` a missing nginx is a failure.
func startNginx(
    files: [String: Data], slowRate: String = "2m", tls: (certificate: URL, key: URL)? = nil, locations: String = ""
) async throws -> NginxServer? {
    guard let binary = try LoopbackWebServer.required(NginxServer.binary, program: "nginx", package: "nginx") else { return nil }
    let nginx = try await offThePool { try NginxServer(binary: binary, slowRate: slowRate, tls: tls, locations: locations) }
    for (name, data) in files { try nginx.publish(data, at: name) }
    return nginx
}

/// lighttpd started for a test with `files` in its document root, or nil (the test skips) when
/// it is not installed; under `CI=true` a missing lighttpd is a failure.
func startLighttpd(files: [String: Data], slowKilobytesPerSecond: Int = 4096) async throws -> LighttpdServer? {
    guard let binary = try LoopbackWebServer.required(LighttpdServer.binary, program: "lighttpd", package: "lighttpd") else { return nil }
    let server = try await offThePool { try LighttpdServer(binary: binary, slowKilobytesPerSecond: slowKilobytesPerSecond) }
    for (name, data) in files { try server.publish(data, at: name) }
    return server
}

/// A transport; `writingBehind` writes every body behind, through a ring small enough to fill.
func httpTransport(bufferSize: Int = 64 * 1024, writingBehind: Bool) -> HTTPTransport {
    HTTPTransport(configuration: .init(
        bufferSize: bufferSize, writeBehindBufferSize: writingBehind ? 2 * bufferSize : 0,
        writeBehindMinimumLength: writingBehind ? 0 : .max))
}

/// Downloads `url` through a real library and returns the delegate after the end.
func downloadThroughLibrary(
    _ url: URL, in folder: TempFolder, configuration: Library.Configuration = .forTests(attempts: 1),
    sha256: String? = nil, delegate: RecordingDelegate = RecordingDelegate(), transport: HTTPTransport = HTTPTransport(),
    mirrors: [URL] = []
) async throws -> RecordingDelegate {
    let library = try Library.open(at: folder.file("library"), transports: TransportRegistry([transport]), configuration: configuration)
    var request = AssetRequest(url: url, sha256: sha256)
    request.mirrors = mirrors
    let asset = try await library.addIssue(name: "issue", date: Date()).addAsset(request)
    try await asset.download(delegate: delegate)
    await delegate.waitForEnd()
    await library.close()
    return delegate
}

extension RecordingDelegate {
    /// The SHA-256 of the single delivered file, if any.
    var deliveredSHA256: String? { keptFiles.count == 1 ? sha256Hex(keptFiles[0]) : nil }

    /// The code of the first failure, if any.
    var failureCode: String? {
        for event in events { if case .failed(let code, _) = event { return code } }
        return nil
    }

    /// The message of the first failure, if any: a transport's failure ends with `(CODE)`.
    var failureMessage: String? {
        for event in events { if case .failed(_, let message) = event { return message } }
        return nil
    }
}

/// A sink whose `begin` or `tryWrite` throws a given error.
final class FailingSink: TransferSink, @unchecked Sendable {
    enum When { case begin, write }
    let error: any Error
    let when: When
    init(_ error: any Error, when: When) {
        self.error = error
        self.when = when
    }
    func begin(_ response: TransferResponse) throws { if when == .begin { throw error } }
    func write(_ bytes: UnsafeRawBufferPointer) async throws { _ = try tryWrite(bytes) }
    func tryWrite(_ bytes: UnsafeRawBufferPointer) throws -> Bool {
        if when == .write { throw error }
        return true
    }
    func whenWritable(_ callback: @escaping @Sendable () -> Void) { callback() }
    func challenge(_ challenge: AuthChallenge) async -> AuthChallengeDisposition { .performDefaultHandling }
}

struct MarkerError: Error, Equatable {}

/// A self-signed certificate for 127.0.0.1 made with openssl, or nil (skipping) without it.
func makeCertificate(in folder: TempFolder) async throws -> (certificate: URL, key: URL)? {
    let certificate = folder.file("cert.pem")
    let key = folder.file("key.pem")
    guard let openssl = ["/usr/bin/openssl", "/bin/openssl"].first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
        // Installed with nginx by scripts/install-deps: under CI a missing tool fails, as a missing server does.
        try #require(ProcessInfo.processInfo.environment["CI"] != "true", "openssl is not installed")
        print("skipping TLS test: openssl is not installed")
        return nil
    }
    let made = try await offThePool {
        try ChildProcess.run(openssl, [
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-keyout", key.path, "-out", certificate.path, "-days", "2", "-subj", "/CN=127.0.0.1",
            "-addext", "subjectAltName=IP:127.0.0.1",
        ])
    }
    try #require(made.status == 0, "openssl: \(made.output)")
    return (certificate, key)
}

extension Library.Configuration {
    /// The tests' configuration with one attempt and `connections` per asset (split downloads, mirrors).
    static func split(connections: Int) -> Library.Configuration {
        var configuration = Library.Configuration.forTests(attempts: 1)
        configuration.connectionsPerAsset = connections
        return configuration
    }
}
