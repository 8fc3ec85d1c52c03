import Foundation
import Paperboy
import PaperboyTesting
import Testing
@testable import PaperboyConfig

@Suite(.timeLimit(.minutes(1))) struct PaperboyConfigurationTests {
    static let fullConfig = """
        # Every key Paperboy knows.
        [library]
        path = "library"
        mode = "background"

        [scheduler]
        max_concurrent = 8
        max_per_host = 2
        retry_attempts = 3
        retry_base_delay = "250ms"
        retry_max_delay = "1h30m"
        connect_timeout = "5s"
        idle_timeout = "2m"

        [bandwidth]
        limit = "10MB/s"
        per_transfer = 2097152
        schedule = [
          "08:00 1MB/s",
          "19:00 10MB/s",
          "23:00 off",
        ]

        [network]
        assume = "cellular,expensive"
        allowed = ["wifi", "cellular"]
        allow_expensive = true
        allow_constrained = false

        [notifications]
        throttle = "12h"
        dont_throttle = true

        [hooks]
        on_issue_available = ["notify-send", "New issue"]

        [[credentials]]
        match = "https://cdn.example.com/"
        username = "reader"
        password_env = "CDN_PASSWORD"
        token_file = "secrets/token.txt"
        private_key = "~/.ssh/id_ed25519"
        passphrase_env = "KEY_PASSPHRASE"
        known_hosts = "/etc/ssh/ssh_known_hosts"
        ca_file = "certs/ca.pem"

        [[feeds]]
        name = "daily"
        url = "https://example.com/catalog.json"

        [[feeds]]
        name = "local"
        url = "catalogs/local.json"

        [[transports]]
        scheme = "IPFS"
        command = ["bin/paperboy-transport-ipfs", "--gateway", "local"]

        [[issues]]
        name = "2026-11-21"
        date = 2026-11-21

          [[issues.assets]]
          url = "content/2026-11-21.pdf"
          sha256 = "E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855"
          path = "magazine.pdf"
          unpack = "zip"
          role = "content"
          priority = 10
          allowed_networks = ["wifi"]
          allow_expensive = false
          allow_constrained = false

          [[issues.assets]]
          url = "https://cdn.example.com/covers/2026-11-21.jpg"
          role = "cover"

        [[issues]]
        name = "special"
        date = "2026-12-24"
        assets = [{ url = "sftp://files.example.com/special.pdf", priority = -1 }]

        [[issues]]
        name = "evening"
        date = 2026-11-21T18:30:00+01:00
        """

    static let secrets = ["CDN_PASSWORD": "hunter2-password", "KEY_PASSPHRASE": "open-sesame-phrase"]

    @Test func fullConfigurationReadsEveryKey() throws {
        let folder = TempFolder(prefix: "paperboy-config-tests")
        try FileManager.default.createDirectory(
            at: folder.url.appendingPathComponent("secrets"), withIntermediateDirectories: true
        )
        try "token-value-123\n".write(to: folder.url.appendingPathComponent("secrets/token.txt"), atomically: true, encoding: .utf8)
        let file = folder.url.appendingPathComponent("paperboy.toml")
        var environment = fixtureEnvironment
        environment.merge(Self.secrets) { $1 }

        let config = try PaperboyConfiguration.parse(Self.fullConfig, fileURL: file, environment: environment)

        #expect(config.fileURL == file)
        #expect(config.library.path == folder.url.appendingPathComponent("library", isDirectory: true).standardizedFileURL)
        #expect(config.library.mode == .background)

        #expect(config.scheduler == SchedulerSettings(
            maxConcurrent: 8, maxPerHost: 2, retryAttempts: 3,
            retryBaseDelay: .milliseconds(250), retryMaxDelay: .seconds(5_400),
            connectTimeout: .seconds(5), idleTimeout: .seconds(120)
        ))

        #expect(config.bandwidth.limit == ByteRate(bytesPerSecond: 10_000_000))
        #expect(config.bandwidth.perTransfer == ByteRate(bytesPerSecond: 2_097_152))
        #expect(config.bandwidth.schedule == [
            BandwidthScheduleEntry(minuteOfDay: 480, rate: ByteRate(bytesPerSecond: 1_000_000), line: 19),
            BandwidthScheduleEntry(minuteOfDay: 1_140, rate: ByteRate(bytesPerSecond: 10_000_000), line: 20),
            BandwidthScheduleEntry(minuteOfDay: 1_380, rate: nil, line: 21),
        ])

        #expect(config.network.assume == .init(interfaceClass: .cellular, attributes: [.expensive]))
        #expect(config.network.allowed == [.wifi, .cellular])
        #expect(config.network.allowExpensive == true)
        #expect(config.network.allowConstrained == false)

        #expect(config.notifications == NotificationSettings(throttle: .seconds(43_200), dontThrottle: true))
        #expect(config.hooks.onIssueAvailable == ["notify-send", "New issue"])

        #expect(config.credentials.count == 1)
        let credential = try #require(config.credentials.first)
        #expect(credential.match == "https://cdn.example.com/")
        #expect(credential.matchURL == URL(string: "https://cdn.example.com/"))
        #expect(credential.matches(URL(string: "https://cdn.example.com/issues/1.pdf")!))
        #expect(!credential.matches(URL(string: "https://other.example.com/")!))
        #expect(credential.username == "reader")
        #expect(credential.password?.source == .environment("CDN_PASSWORD"))
        #expect(try credential.password?.reveal() == "hunter2-password")
        #expect(credential.token?.source == .file(folder.url.appendingPathComponent("secrets/token.txt").standardizedFileURL))
        #expect(try credential.token?.reveal() == "token-value-123")
        #expect(credential.privateKey == URL(fileURLWithPath: "/home/reader/.ssh/id_ed25519"))
        #expect(try credential.passphrase?.reveal() == "open-sesame-phrase")
        #expect(credential.knownHosts == URL(fileURLWithPath: "/etc/ssh/ssh_known_hosts"))
        #expect(credential.caFile == folder.url.appendingPathComponent("certs/ca.pem").standardizedFileURL)
        #expect(credential.line == 37)

        #expect(config.feeds == [
            FeedEntry(name: "daily", url: URL(string: "https://example.com/catalog.json")!, line: 47),
            FeedEntry(
                name: "local", url: folder.url.appendingPathComponent("catalogs/local.json").standardizedFileURL, line: 51
            ),
        ])
        #expect(config.feeds[1].url.isFileURL)

        #expect(config.transports == [
            TransportEntry(
                scheme: "ipfs",
                command: [folder.url.appendingPathComponent("bin/paperboy-transport-ipfs").standardizedFileURL.path,
                          "--gateway", "local"],
                line: 55
            ),
        ])

        #expect(config.issues.count == 3)
        let first = config.issues[0]
        #expect(first.name == "2026-11-21")
        #expect(first.date == Date(timeIntervalSince1970: 1_795_219_200))
        #expect(first.line == 59)
        #expect(first.assets == [
            AssetEntry(
                url: folder.url.appendingPathComponent("content/2026-11-21.pdf").standardizedFileURL,
                sha256: "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
                path: "magazine.pdf", unpack: .zip, role: .content, priority: 10,
                allowedNetworks: [.wifi], allowExpensive: false, allowConstrained: false, line: 63
            ),
            AssetEntry(
                url: URL(string: "https://cdn.example.com/covers/2026-11-21.jpg")!,
                path: "2026-11-21.jpg", role: .cover, line: 74
            ),
        ])
        #expect(config.issues[1].date == Date(timeIntervalSince1970: 1_798_070_400))
        #expect(config.issues[1].assets == [
            AssetEntry(url: URL(string: "sftp://files.example.com/special.pdf")!, path: "special.pdf", priority: -1, line: 81),
        ])
        #expect(config.issues[2].date == Date(timeIntervalSince1970: 1_795_219_200 + 17.5 * 3_600))

        #expect(config.line(for: "scheduler.max_per_host") == 8)
        #expect(config.line(for: "issues[0].assets[0].sha256") == 65)
        #expect(config.line(for: "issues[1].assets[0].priority") == 81)
        #expect(config.line(for: "bandwidth.schedule[2]") == 21)
        #expect(config.line(for: "issues[2].date") == 85)
    }

    @Test(arguments: [("\"2GiB\"", 2 << 30), ("\"500 MB\"", 500_000_000), ("1000000", 1_000_000)])
    func archiveLimitsAreRead(size: String, bytes: Int64) throws {
        let config = try PaperboyConfiguration.parse(
            "[library]\nmax_unpacked_size = \(size)\nmax_unpack_ratio = 50\n", fileURL: fixtureFile, environment: fixtureEnvironment)
        #expect(config.library.maxUnpackedSize == bytes)
        #expect(config.library.maxUnpackRatio == 50)
        let defaults = try PaperboyConfiguration.parse("", fileURL: fixtureFile, environment: fixtureEnvironment)
        #expect(defaults.library.maxUnpackedSize == 20 << 30 && defaults.library.maxUnpackRatio == 200)
    }

    @Test(arguments: [("\"512MiB\"", FreeSpaceFloor.bytes(512 << 20)), ("1000000", .bytes(1_000_000)), ("\"2%\"", .percent(2)),
                      ("\"0.5 %\"", .percent(0.5))])
    func theFreeSpaceFloorIsASizeOrAPercentage(value: String, floor: FreeSpaceFloor) throws {
        let config = try PaperboyConfiguration.parse("[library]\nmin_free_space = \(value)\n", fileURL: fixtureFile, environment: fixtureEnvironment)
        #expect(config.library.minFreeSpace == floor)
        let defaults = try PaperboyConfiguration.parse("", fileURL: fixtureFile, environment: fixtureEnvironment)
        #expect(defaults.library.minFreeSpace == FreeSpaceFloor(bytes: 256 << 20, percent: 1))
        // The default on a 100 GB disk is its 1 %; on a 10 GB one, 256 MiB.
        #expect(defaults.library.minFreeSpace.bytes(onFileSystemOfSize: 100_000_000_000) == 1_000_000_000)
        #expect(defaults.library.minFreeSpace.bytes(onFileSystemOfSize: 10_000_000_000) == 256 << 20)
    }

    @Test(arguments: ["\"0%\"", "\"100%\"", "\"-1%\"", "\"lots%\"", "\"12 parsecs\"", "0", "-5"])
    func aFreeSpaceFloorThatIsNeitherIsRefused(value: String) throws {
        #expect {
            try PaperboyConfiguration.parse("[library]\nmin_free_space = \(value)\n", fileURL: fixtureFile, environment: fixtureEnvironment)
        } throws: { error in
            guard let error = error as? ConfigError else { return false }
            return error.line == 2 && error.key == "library.min_free_space"
        }
    }

    @Test func absentSectionsTakeTheirDefaults() throws {
        let config = try PaperboyConfiguration.parse("", fileURL: fixtureFile, environment: fixtureEnvironment)
        #expect(config.library.path == URL(fileURLWithPath: "/home/reader/.local/share/paperboy", isDirectory: true))
        #expect(config.library.mode == .foreground)
        #expect(config.scheduler == SchedulerSettings(
            maxConcurrent: 4, maxPerHost: 4, retryAttempts: 5, retryBaseDelay: .seconds(1), retryMaxDelay: .seconds(300),
            connectTimeout: .seconds(30), idleTimeout: .seconds(60)
        ))
        #expect(config.bandwidth == BandwidthSettings(limit: nil, perTransfer: nil, schedule: []))
        #expect(config.network == NetworkSettings(
            assume: nil, allowed: [.wired, .wifi, .cellular, .other], allowExpensive: true, allowConstrained: true
        ))
        #expect(config.notifications == NotificationSettings(throttle: .seconds(86_400), dontThrottle: false))
        #expect(config.hooks.onIssueAvailable == nil)
        #expect(config.hooks.timeout == .seconds(600))
        #expect(config.scheduler.noProgressTimeout == nil)
        #expect(config.credentials.isEmpty && config.feeds.isEmpty && config.transports.isEmpty && config.issues.isEmpty)
    }

    @Test func noProgressAndHookTimeoutsAreRead() throws {
        let text = "[scheduler]\nno_progress_timeout = \"20m\"\n[hooks]\ntimeout = \"90s\"\n"
        let config = try PaperboyConfiguration.parse(text, fileURL: fixtureFile, environment: fixtureEnvironment)
        #expect(config.scheduler.noProgressTimeout == .seconds(1_200))
        #expect(config.hooks.timeout == .seconds(90))
        let off = try PaperboyConfiguration.parse(
            "[scheduler]\nno_progress_timeout = \"off\"\n", fileURL: fixtureFile, environment: fixtureEnvironment)
        #expect(off.scheduler.noProgressTimeout == nil)
    }

    @Test func defaultsFollowTheEnvironmentAndMode() throws {
        let config = try PaperboyConfiguration.parse(
            "[library]\nmode = \"background\"\n",
            fileURL: fixtureFile,
            environment: ["HOME": "/home/reader", "XDG_DATA_HOME": "/data"]
        )
        #expect(config.library.path == URL(fileURLWithPath: "/data/paperboy", isDirectory: true))
        #expect(config.network.allowExpensive == false)
    }

    @Test func assetDefaults() throws {
        let config = try PaperboyConfiguration.parse("""
            [[issues]]
            name = "one"
            date = "2026-01-02"
            [[issues.assets]]
            url = "https://example.com/a/b/file%20name.pdf?token=1"
            """, fileURL: fixtureFile, environment: fixtureEnvironment)
        let asset = try #require(config.issues.first?.assets.first)
        #expect(asset.path == "file name.pdf")
        #expect(asset.sha256 == nil && asset.unpack == nil && asset.role == .content && asset.priority == 0)
        #expect(asset.allowedNetworks == nil && asset.allowExpensive == nil && asset.allowConstrained == nil)
        #expect(config.issues[0].date == Date(timeIntervalSince1970: 1_767_312_000))
        #expect(asset.mirrors.isEmpty)
    }

    /// `mirrors` are read as `url` is: a plain path becomes a file URL beside the configuration.
    @Test func assetMirrorsAreReadAsTheURLIs() throws {
        let config = try PaperboyConfiguration.parse("""
            [[issues]]
            name = "one"
            date = "2026-01-02"
            [[issues.assets]]
            url = "https://example.com/big.iso"
            mirrors = ["https://mirror.example.org/pub/big.iso", "local/big.iso"]
            """, fileURL: fixtureFile, environment: fixtureEnvironment)
        let asset = try #require(config.issues.first?.assets.first)
        #expect(asset.mirrors == [URL(string: "https://mirror.example.org/pub/big.iso")!,
                                  fixtureFile.deletingLastPathComponent().appendingPathComponent("local/big.iso")])
    }

    @Test func loadReadsAFileAndReportsAMissingOne() throws {
        let folder = TempFolder(prefix: "paperboy-config-tests")
        let file = folder.url.appendingPathComponent("paperboy.toml")
        try "[scheduler]\nmax_concurrent = 2\n".write(to: file, atomically: true, encoding: .utf8)
        let config = try PaperboyConfiguration.load(contentsOf: file, environment: fixtureEnvironment)
        #expect(config.scheduler.maxConcurrent == 2)

        let missing = folder.url.appendingPathComponent("nope.toml")
        #expect {
            try PaperboyConfiguration.load(contentsOf: missing, environment: fixtureEnvironment)
        } throws: { error in
            (error as? ConfigError)?.code == .unreadable && (error as? ConfigError)?.file == missing
        }
    }

    @Test func parsingWritesNothing() throws {
        let folder = TempFolder(prefix: "paperboy-config-tests")
        let file = folder.url.appendingPathComponent("paperboy.toml")
        _ = try PaperboyConfiguration.parse(
            "[library]\npath = \"lib\"\n[[issues]]\nname = \"a\"\ndate = 2026-01-01\n[[issues.assets]]\nurl = \"x/y.pdf\"\n",
            fileURL: file, environment: fixtureEnvironment
        )
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.url.path).isEmpty)
    }

    @Test func defaultConfigURLSearchOrder() throws {
        let folder = TempFolder(prefix: "paperboy-config-tests")
        let cwd = folder.url.appendingPathComponent("work", isDirectory: true)
        let xdg = folder.url.appendingPathComponent("xdg", isDirectory: true)
        let home = folder.url.appendingPathComponent("home", isDirectory: true)
        try FileManager.default.createDirectory(at: cwd, withIntermediateDirectories: true)
        let environment = ["HOME": home.path, "XDG_CONFIG_HOME": xdg.path]

        #expect(PaperboyConfiguration.defaultConfigURL(explicit: "conf/p.toml", currentDirectory: cwd, environment: environment)
            == cwd.appendingPathComponent("conf/p.toml").standardizedFileURL)
        #expect(PaperboyConfiguration.defaultConfigURL(explicit: nil, currentDirectory: cwd, environment: environment) == nil)

        let homeFile = home.appendingPathComponent(".config/paperboy/paperboy.toml")
        try FileManager.default.createDirectory(at: homeFile.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data().write(to: homeFile)
        #expect(PaperboyConfiguration.defaultConfigURL(explicit: nil, currentDirectory: cwd, environment: ["HOME": home.path])
            == homeFile)
        #expect(PaperboyConfiguration.defaultConfigURL(explicit: nil, currentDirectory: cwd, environment: environment) == nil)

        let xdgFile = xdg.appendingPathComponent("paperboy/paperboy.toml")
        try FileManager.default.createDirectory(at: xdgFile.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data().write(to: xdgFile)
        #expect(PaperboyConfiguration.defaultConfigURL(explicit: nil, currentDirectory: cwd, environment: environment) == xdgFile)

        let localFile = cwd.appendingPathComponent("paperboy.toml")
        try Data().write(to: localFile)
        #expect(PaperboyConfiguration.defaultConfigURL(explicit: nil, currentDirectory: cwd, environment: environment) == localFile)
    }
}
