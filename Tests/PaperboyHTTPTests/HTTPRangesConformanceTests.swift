import Foundation
import Paperboy
import PaperboyHTTP
import PaperboyTestServers
import PaperboyTransportTesting
import Testing

/// Files in a real nginx's document root; `/whole/` announces ranges and answers each with the
/// whole file (HTTP 200).
struct NginxFixture: TransportFixture {
    static let locations = "location ^~ /whole/ { max_ranges 0; add_header Accept-Ranges bytes; }"
    let nginx: NginxServer

    func publish(_ data: Data, as name: String) async throws -> URL {
        try nginx.publish(data, at: name)
        return nginx.url("/\(name)")
    }

    func replace(_ url: URL, with data: Data) async throws {
        try nginx.publish(data, at: String(url.path.dropFirst()))
    }

    func missingURL() async throws -> URL { nginx.url("/missing-\(UUID().uuidString).bin") }

    func publishIgnoringRanges(_ data: Data, as name: String) async throws -> URL? {
        try await publish(data, as: "whole/\(name)")
    }
}

/// The conformance suite's `ranges` check against the HTTP transport: it declares ranges, splits
/// a large file over several connections into segments, and refuses ranges answered whole.
@Suite("HTTP ranges conformance", .serialized, .timeLimit(.minutes(3)))
struct HTTPRangesConformanceTests {
    @Test func theHTTPTransportPassesTheRangesCheck() async throws {
        guard let nginx = try await startNginx(files: [:], locations: NginxFixture.locations) else { return }
        defer { nginx.stop() }
        #expect(HTTPTransport().capabilities.isSuperset(of: [.ranges, .segments]))
        let outcome = await TransportConformance(HTTPTransport(), fixture: NginxFixture(nginx: nginx)).run(.segments)
        #expect(outcome == .passed)
        let ranges = await TransportConformance(HTTPTransport(), fixture: NginxFixture(nginx: nginx)).run(.ranges)
        #expect(ranges == .passed)
        // The split really happened: ranges of the plain file were answered 206, and ranges of
        // the file under /whole/ were asked for and answered 200 (refused, see the check).
        let log = nginx.accessLog
        #expect(log.contains { $0.hasPrefix("206 \"bytes=") }, "\(log)")
        #expect(log.contains { $0.hasPrefix("200 \"bytes=") }, "\(log)")
    }
}
