import Foundation
import Paperboy
import PaperboyTesting
import Testing
@testable import PaperboyConfig

/// `Library.Configuration(config)`: what a file's settings make of the library.
@Suite(.timeLimit(.minutes(2))) struct LibraryConfigurationTests {
    @Test func theSectionsBecomeTheLibrarysSettings() throws {
        let config = try PaperboyConfiguration.parse("""
            [library]
            mode = "background"
            sync_to_disk = false
            max_unpacked_size = "1GiB"
            max_unpack_ratio = 50
            min_free_space = "2%"
            checkpoint_interval = "5s"

            [scheduler]
            max_concurrent = 8
            max_per_host = 2
            retry_attempts = 3
            retry_base_delay = "250ms"
            retry_max_delay = "1m"
            no_progress_timeout = "10m"
            connect_timeout = "5s"
            idle_timeout = "2m"

            [bandwidth]
            limit = "10MB/s"
            per_transfer = "1MB/s"
            schedule = ["08:00 1MB/s", "23:00 off"]

            [network]
            allowed = ["wifi", "wired"]
            allow_expensive = true
            allow_constrained = false
            """, fileURL: fixtureFile, environment: fixtureEnvironment)
        let configuration = try Library.Configuration(config)
        #expect(configuration.mode == .background)
        #expect(!configuration.syncsToDisk)
        #expect(configuration.maxUnpackedBytes == 1 << 30)
        #expect(configuration.maxUnpackRatio == 50)
        #expect(configuration.minFreeSpace == .percent(2))
        #expect(configuration.checkpointInterval == .seconds(5))
        #expect(configuration.maxConcurrentTransfers == 8)
        #expect(configuration.maxTransfersPerHost == 2)
        #expect(configuration.retry == RetryPolicy(maxAttempts: 3, baseDelay: .milliseconds(250), maxDelay: .seconds(60),
                                                   noProgressTimeout: .seconds(600)))
        #expect(configuration.connectTimeout == .seconds(5))
        #expect(configuration.idleTimeout == .seconds(120))
        #expect(configuration.bandwidthLimit == 10_000_000)
        #expect(configuration.perTransferBandwidthLimit == 1_000_000)
        #expect(configuration.bandwidthSchedule?.entries.map(\.minuteOfDay) == [8 * 60, 23 * 60])
        #expect(configuration.bandwidthSchedule?.entries.map(\.bytesPerSecond) == [1_000_000, nil])
        let policy = try #require(configuration.networkPolicy)
        #expect(policy.allowedKinds == [.wifi, .wired])
        #expect(policy.allowsExpensive && !policy.allowsConstrained && !policy.allowsRoaming)
    }

    @Test func anAbsentFileKeepsTheLibrarysDefaults() throws {
        let configuration = try Library.Configuration(PaperboyConfiguration.parse("", fileURL: fixtureFile, environment: fixtureEnvironment))
        let defaults = Library.Configuration()
        #expect(configuration.checkpointInterval == defaults.checkpointInterval)
        #expect(configuration.bandwidthSchedule == nil && configuration.credentials == nil)
        #expect(configuration.maxConcurrentTransfers == defaults.maxConcurrentTransfers)
    }

    /// A secret file is read when the library's configuration is made, and one that cannot be
    /// read is named, never its contents.
    @Test func anUnreadableSecretFileIsNamed() throws {
        let folder = TempFolder()
        let secret = folder.file("password.txt")
        try Data("s3cr3t\n".utf8).write(to: secret)
        let config = try PaperboyConfiguration.parse("""
            [[credentials]]
            match = "https://cdn.example.com/"
            username = "reader"
            password_file = "\(secret.path)"
            """, fileURL: fixtureFile, environment: fixtureEnvironment)
        #expect(try Library.Configuration(config).credentials != nil)
        try Data([0xFF, 0xFE]).write(to: secret)
        #expect {
            try Library.Configuration(config)
        } throws: { error in
            let error = try #require(error as? ConfigError)
            return error.code == .unreadable && error.description.contains(secret.path) && !error.description.contains("s3cr3t")
        }
    }

    /// `[scheduler] connections_per_asset` reaches the library (and from there every transfer job).
    @Test func connectionsPerAssetIsTheLibrarysSetting() throws {
        let config = try PaperboyConfiguration.parse("[scheduler]\nconnections_per_asset = 4\n", fileURL: fixtureFile, environment: fixtureEnvironment)
        #expect(try Library.Configuration(config).connectionsPerAsset == 4)
        let defaults = try PaperboyConfiguration.parse("", fileURL: fixtureFile, environment: fixtureEnvironment)
        #expect(try Library.Configuration(defaults).connectionsPerAsset == 1)
    }

    @Test(arguments: ["0", "17", "\"4\""])
    func connectionsPerAssetOutOfRangeIsRefused(value: String) throws {
        #expect {
            try PaperboyConfiguration.parse("[scheduler]\nconnections_per_asset = \(value)\n", fileURL: fixtureFile, environment: fixtureEnvironment)
        } throws: { error in
            guard let error = error as? ConfigError else { return false }
            return [.invalidValue, .typeMismatch].contains(error.code) && error.line == 2 && error.key == "scheduler.connections_per_asset"
        }
    }

    @Test(arguments: ["\"50ms\"", "\"2h\"", "\"soon\"", "5"])
    func aCheckpointIntervalOutOfRangeIsRefused(value: String) throws {
        #expect {
            try PaperboyConfiguration.parse("[library]\ncheckpoint_interval = \(value)\n", fileURL: fixtureFile, environment: fixtureEnvironment)
        } throws: { error in
            guard let error = error as? ConfigError else { return false }
            return [.invalidValue, .typeMismatch].contains(error.code) && error.line == 2 && error.key == "library.checkpoint_interval"
        }
    }

    /// `[library] checkpoint_interval` times the library's checkpoints: with `"100ms"`, the bytes
    /// of the first write 100 ms into a transfer are recorded, where the default (500 ms) would
    /// record nothing yet.
    @Test func theCheckpointIntervalTimesTheRecordedBytes() async throws {
        let folder = TempFolder()
        let clock = TestClock()
        let config = try PaperboyConfiguration.parse("""
            [library]
            path = "\(folder.file("lib").path)"
            sync_to_disk = false
            checkpoint_interval = "100ms"
            """, fileURL: fixtureFile, environment: fixtureEnvironment)
        var configuration = try Library.Configuration(config)
        configuration.clock = clock
        configuration.networkMonitor = FixedNetworkMonitor(NetworkStatus(kind: .wired))
        // Bodies of at most 256 KiB are gathered in memory and recorded at their end only.
        let chunk = 64 << 10
        let transport = InMemoryTransport(chunkSize: chunk, chunkDelay: .milliseconds(100), clock: clock)
        let url = transport.serve(Data(repeating: 7, count: 16 * chunk), at: "issue.pdf")
        let library = try Library.open(at: config.library.path, transports: TransportRegistry([transport]), configuration: configuration)
        let asset = try await library.addIssue(name: "i", date: Date()).addAsset(AssetRequest(url: url))
        try await asset.download()
        try await eventually("the first chunk waits", seen: "\(clock.pendingSleeps)") {
            clock.pendingSleeps.contains(.milliseconds(100))
        }
        clock.advance(by: .milliseconds(100))
        let reader = try Library.openForReading(at: config.library.path)
        var recorded: Int64 = -1
        try await eventually("a checkpoint of the first chunk", seen: "\(recorded) bytes recorded") {
            recorded = (try? await reader.asset(identifier: asset.identifier))?.totalBytesWritten ?? -1
            return recorded == Int64(chunk)
        }
        await library.close()
    }
}
