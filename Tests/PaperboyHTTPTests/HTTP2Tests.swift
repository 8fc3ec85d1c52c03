import Foundation
import Paperboy
import PaperboyHTTP
import PaperboyTestServers
import PaperboyTesting
import Testing

/// Many small files from one host over TLS, against a real nginx `listen … ssl http2`: HTTP/2 is
/// negotiated and every transfer is a stream of one connection (nginx logs `$server_protocol`
/// and `$connection`); `http_version = "1.1"` speaks HTTP/1.1. TLS is verified throughout.
@Suite("HTTP/2 over TLS", .serialized, .timeLimit(.minutes(3)))
struct HTTP2Tests {
    let folder = TempFolder()

    /// Small files of distinct bytes, published under `/small/`.
    func smallFiles(_ count: Int, on nginx: NginxServer) throws -> [Data] {
        try (0..<count).map { index in
            var data = Data(count: 64 << 10)
            data.withUnsafeMutableBytes { bytes in
                for position in stride(from: 0, to: bytes.count, by: 8) {
                    bytes.storeBytes(of: UInt64(position) &* 0x9E37_79B9_7F4A_7C15 &+ UInt64(index), toByteOffset: position, as: UInt64.self)
                }
            }
            try nginx.publish(data, at: "small/f\(index).bin")
            return data
        }
    }

    /// Fetches every file at once through `transport`; the bytes each transfer received.
    func fetchAll(_ count: Int, from nginx: NginxServer, transport: HTTPTransport, options: [String: String] = [:]) async throws -> [Data] {
        try await withThrowingTaskGroup(of: (Int, Data).self) { group in
            for index in 0..<count {
                let url = try #require(nginx.tlsURL("/small/f\(index).bin"))
                group.addTask {
                    var job = TransferJob.forTests(url)
                    job.options = options
                    let sink = RecordingSink()
                    try await transport.transfer(job, into: sink)
                    return (index, sink.data)
                }
            }
            var received = [Data](repeating: Data(), count: count)
            for try await (index, data) in group { received[index] = data }
            return received
        }
    }

    /// The protocol log's lines for the small files: `(protocol, connection)`.
    func smallFileRequests(_ nginx: NginxServer) -> [(protocol: String, connection: String)] {
        nginx.protocolLog.map { $0.split(separator: " ").map(String.init) }
            .filter { $0.count == 4 && $0[3].hasPrefix("/small/") }
            .map { ($0[0], $0[1]) }
    }

    @Test func smallFilesToOneHostAreStreamsOfOneHTTP2Connection() async throws {
        guard let (certificate, key) = try await makeCertificate(in: folder),
              let nginx = try await startNginx(files: [:], tls: (certificate, key)) else { return }
        defer { nginx.stop() }
        let files = try smallFiles(24, on: nginx)

        let received = try await fetchAll(files.count, from: nginx, transport: HTTPTransport(caFile: certificate.path))

        #expect(received == files, "a file differs from the one published")
        // nginx logs a request once it is answered.
        try await eventually("24 requests logged", seen: "\(nginx.protocolLog)") { smallFileRequests(nginx).count == files.count }
        let requests = smallFileRequests(nginx)
        #expect(requests.allSatisfy { $0.protocol == "HTTP/2.0" }, "\(requests)")
        #expect(Set(requests.map(\.connection)).count == 1, "streams of one connection: \(requests)")
    }

    @Test func httpVersionOneOneSpeaksHTTP1() async throws {
        guard let (certificate, key) = try await makeCertificate(in: folder),
              let nginx = try await startNginx(files: [:], tls: (certificate, key)) else { return }
        defer { nginx.stop() }
        let files = try smallFiles(4, on: nginx)
        var configuration = HTTPTransport.Configuration(caFile: certificate.path)
        configuration.allowsHTTP2 = false

        // The option "2" allows HTTP/2 against a configuration that does not.
        let first = try await fetchAll(1, from: nginx, transport: HTTPTransport(configuration: configuration), options: ["http_version": "2"])
        #expect(first.first == files.first)
        try await eventually("1 request logged", seen: "\(nginx.protocolLog)") { smallFileRequests(nginx).count == 1 }
        #expect(smallFileRequests(nginx).first?.protocol == "HTTP/2.0")

        // The option "1.1", though an HTTP/2 connection to the host is open; then the configuration.
        let byOption = try await fetchAll(files.count, from: nginx, transport: HTTPTransport(caFile: certificate.path), options: ["http_version": "1.1"])
        let byConfiguration = try await fetchAll(files.count, from: nginx, transport: HTTPTransport(configuration: configuration))

        #expect(byOption == files)
        #expect(byConfiguration == files)
        try await eventually("9 requests logged", seen: "\(nginx.protocolLog)") { smallFileRequests(nginx).count == 1 + 2 * files.count }
        let requests = smallFileRequests(nginx).dropFirst()
        #expect(requests.allSatisfy { $0.protocol == "HTTP/1.1" }, "\(requests)")
    }

    @Test func anUnknownHTTPVersionIsRefusedNamingIt() async throws {
        var job = TransferJob.forTests(URL(string: "https://127.0.0.1:9/x.bin")!)
        job.options = ["http_version": "3"]
        let refused = await transportError { try await HTTPTransport().transfer(job, into: RecordingSink()) }
        #expect(refused?.code == .badURL)
        #expect(refused?.isRetryable == false)
        #expect(refused?.message.contains("http_version = '3'") == true, "\(refused?.message ?? "")")
    }
}
