import Foundation
import Paperboy
import PaperboyHTTP
import PaperboyTestServers
import PaperboyTesting
import Testing

@Suite("HTTP errors", .timeLimit(.minutes(2)))
struct TransportErrorCurlTests {
    let data = randomData(1 << 20)

    func fetch(_ server: FaultServer, _ path: String = "/f", idleTimeout: Duration = .seconds(10)) async -> TransportError? {
        await transportError {
            try await HTTPTransport().transfer(.forTests(server.url(path), idleTimeout: idleTimeout), into: RecordingSink())
        }
    }

    @Test func aResetIsARetryableConnectionLoss() async throws {
        let data = self.data
        let server = try FaultServer { .serving(data, for: $0, fault: .resetAfter(300_000)) }
        let error = await fetch(server)
        #expect(error?.code == .connectionLost)
        #expect(error?.isRetryable == true)
        #expect(error?.message.contains(server.url("/f").absoluteString) == true)
    }

    @Test func aShortBodyIsARetryableConnectionLoss() async throws {
        let data = self.data
        let server = try FaultServer { .serving(data, for: $0, fault: .closeAfter(1000)) }
        let error = await fetch(server)
        #expect(error?.code == .connectionLost)
        #expect(error?.isRetryable == true)
        #expect(error?.message.contains("after 1000 of \(data.count) bytes") == true)
    }

    @Test func aRefusedConnectionIsARetryableConnectFailure() async throws {
        // Not a stopped server's port: another test's server may take that at once.
        let refusing = try RefusingPort()
        let url = refusing.url("/f")
        let error = await transportError { try await HTTPTransport().transfer(.forTests(url), into: RecordingSink()) }
        withExtendedLifetime(refusing) {}
        #expect(error?.code == .connectionFailed)
        #expect(error?.isRetryable == true)
    }

    @Test(arguments: [
        (404, TransportError.Code.notFound, false),
        (410, .notFound, false),
        (403, .accessDenied, false),
        (400, .protocolError, false),
        (500, .serverError, true),
        (502, .serverError, true),
        (503, .serverError, true),
        (429, .rateLimited, true),
    ])
    func statusesMapToTypedErrors(status: Int, code: TransportError.Code, retryable: Bool) async throws {
        let server = try FaultServer { _ in ServerResponse(status: status, body: Data(repeating: 0x41, count: 100)) }
        let error = await fetch(server)
        #expect(error?.code == code)
        #expect(error?.isRetryable == retryable)
        #expect(error?.message.hasPrefix("HTTP \(status)") == true)
        #expect(error?.message.contains(server.url("/f").absoluteString) == true)
    }

    @Test func retryAfterSecondsIsKept() async throws {
        let server = try FaultServer { _ in ServerResponse(status: 429, headers: [("Retry-After", "7")]) }
        let error = await fetch(server)
        #expect(error?.code == .rateLimited)
        #expect(error?.retryAfter == .seconds(7))
    }

    @Test func retryAfterAnHTTPDateBecomesADelay() async throws {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        let when = formatter.string(from: Date().addingTimeInterval(120))
        let server = try FaultServer { _ in ServerResponse(status: 503, headers: [("Retry-After", when)]) }
        let start = ContinuousClock.now
        let error = await fetch(server)
        let elapsed = ContinuousClock.now - start
        #expect(error?.code == .rateLimited)
        #expect(error?.isRetryable == true)
        let delay = try #require(error?.retryAfter)
        // The date is 120 s ahead when sent (one-second resolution); a busy machine may take a while to answer.
        #expect(delay > .seconds(118) - elapsed && delay <= .seconds(121), "delay \(delay) after \(elapsed)")
    }

    @Test func theLibraryRetriesA500AndDelivers() async throws {
        let data = self.data
        let server = try FaultServer { request in
            request.index == 0 ? ServerResponse(status: 500) : .serving(data, for: request)
        }
        let folder = TempFolder()
        let delegate = try await downloadThroughLibrary(server.url("/f"), in: folder, configuration: .forTests(attempts: 2))
        #expect(delegate.deliveredSHA256 == sha256Hex(data), "events: \(delegate.events)")
        #expect(server.requests.count == 2)
    }

    @Test func theLibraryFailsA404WithoutRetrying() async throws {
        let server = try FaultServer { _ in ServerResponse(status: 404) }
        let folder = TempFolder()
        let delegate = try await downloadThroughLibrary(server.url("/gone"), in: folder, configuration: .forTests(attempts: 3))
        #expect(delegate.failureCode == "transport")
        #expect(server.requests.count == 1)
    }

    @Test func followsARedirectChain() async throws {
        let data = self.data
        let server = try FaultServer { request in
            switch request.path {
            case "/a": .redirect(to: "/b", status: 301)
            case "/b": .redirect(to: "/c")
            case "/c": .redirect(to: "/file")
            default: .serving(data, for: request)
            }
        }
        let sink = RecordingSink()
        try await HTTPTransport().transfer(.forTests(server.url("/a")), into: sink)
        #expect(server.requests.map(\.path) == ["/a", "/b", "/c", "/file"])
        #expect(sink.beginCount == 1)
        #expect(sha256Hex(sink.data) == sha256Hex(data))
    }

    @Test func stopsAfterTooManyRedirects() async throws {
        let server = try FaultServer { request in .redirect(to: "/loop\(request.index)") }
        let error = await transportError {
            try await HTTPTransport(maxRedirects: 3).transfer(.forTests(server.url("/start")), into: RecordingSink())
        }
        #expect(error?.code == .tooManyRedirects)
        #expect(error?.isRetryable == false)
        #expect(server.requests.count == 4)
    }

    @Test func refusesRedirectsToOtherSchemes() async throws {
        let server = try FaultServer { _ in .redirect(to: "file:///etc/passwd") }
        let error = await fetch(server)
        #expect(error?.code == .badURL)
    }
}
