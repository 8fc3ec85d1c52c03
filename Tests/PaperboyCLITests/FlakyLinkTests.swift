import Foundation
import PaperboyTestServers
import PaperboyTesting
import Testing

/// `retry_attempts` counts attempts without progress: a link that drops every few megabytes
/// never exhausts it while each attempt gets further (issue 16, case 1); in process and through a
/// daemon, whose `[scheduler]` counts them (issue 27).
@Suite("paperboy sync on a flaky link", .timeLimit(.minutes(2)))
struct FlakyLinkTests {
    let workspace = Workspace()

    static let size = 1 << 20
    static let cut = size / 8

    func config(_ url: URL, attempts: Int) -> URL {
        workspace.write("""
            [library]
            path = "lib"
            [scheduler]
            retry_attempts = \(attempts)
            retry_base_delay = "20ms"
            retry_max_delay = "50ms"
            [[issues]]
            name = "a"
            date = 2026-11-21
              [[issues.assets]]
              url = "\(url.absoluteString)"
              path = "big.bin"
            """, to: "paperboy.toml")
    }

    /// The `Range` start of each request (0 for a request without one).
    func offsets(_ server: FaultServer) -> [Int] {
        server.requests.map { request in
            guard let range = request.header("range"), range.hasPrefix("bytes=") else { return 0 }
            return Int(range.dropFirst(6).split(separator: "-").first ?? "") ?? -1
        }
    }

    @Test(arguments: CLIRoute.allCases)
    func aLinkCutAfterEveryEighthOfTheFileStillCompletesInOneSync(_ route: CLIRoute) async throws {
        let data = randomData(Self.size, seed: 16)
        // Every response is cut after an eighth of the file: the first with a reset, the others
        // with an early close (a body shorter than announced): seven cuts, three attempts allowed.
        let server = try FaultServer { request in
            .serving(data, for: request, fault: request.index == 0 ? .resetAfter(Self.cut) : .closeAfter(Self.cut))
        }
        let file = config(server.url("/big.bin"), attempts: 3)
        let cli = RoutedCLI(route, workspace: workspace)
        defer { cli.stop() }
        try await cli.start(libraryWideOf: file)
        let result = try await cli.run(["sync", "--config", file.path])
        #expect(result.status == 0, "\(result.stderr)")
        let delivered = try Data(contentsOf: workspace.path("lib/Issues/a/big.bin"))
        #expect(sha256Hex(delivered) == sha256Hex(data))
        // Each attempt resumed where the last one stopped: eight requests, no byte fetched twice.
        #expect(offsets(server) == (0..<8).map { $0 * Self.cut }, "\(offsets(server))")
        // Attempts are counted from the last progress: every wait is for the first retry.
        #expect(result.stderr.contains("retry 1 in 0."), "\(result.stderr)")
        #expect(!result.stderr.contains("retry 2 in"), "\(result.stderr)")
    }

    @Test(arguments: CLIRoute.allCases)
    func attemptsWithoutProgressStillGiveUpAfterRetryAttempts(_ route: CLIRoute) async throws {
        let data = randomData(Self.size, seed: 17)
        // The first response brings an eighth of the file; every later one closes before a byte.
        let server = try FaultServer { request in
            .serving(data, for: request, fault: .closeAfter(request.index == 0 ? Self.cut : 0))
        }
        let file = config(server.url("/big.bin"), attempts: 3)
        let cli = RoutedCLI(route, workspace: workspace)
        defer { cli.stop() }
        try await cli.start(libraryWideOf: file)
        let result = try await cli.run(["sync", "--config", file.path])
        #expect(result.status == 1, "\(result.stderr)")
        // The attempt with progress, then three without.
        #expect(offsets(server) == [0, Self.cut, Self.cut, Self.cut], "\(offsets(server))")
        #expect(result.stderr.contains("gave up after 3 attempts without progress"), "\(result.stderr)")
        #expect(result.stderr.contains("big.bin"), "\(result.stderr)")
    }
}
