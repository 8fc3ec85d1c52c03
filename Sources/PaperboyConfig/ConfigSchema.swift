import Paperboy

/// The keys each table may hold; anything else is an unknown key or table.
enum ConfigSchema {
    /// Keys whose value is a ``Library/Configuration`` setting as it is, by table: each is its
    /// schema and its decoder in one line. Such a key takes three places: this list, the
    /// setting, and docs/Configuration.md (with `paperboy.example.toml`).
    static let settingKeys: [(table: String, keys: [SettingKey])] = [
        ("library", [.duration("checkpoint_interval", \.checkpointInterval, in: .milliseconds(100)...Duration.seconds(3600))]),
        ("scheduler", [.integer("connections_per_asset", \.connectionsPerAsset, in: 1...16)]),
    ]

    static let topLevel = [
        "library", "scheduler", "bandwidth", "network", "notifications", "hooks", "daemon",
        "credentials", "feeds", "transports", "issues",
    ]
    static let library = ["path", "mode", "sync_to_disk", "max_unpacked_size", "max_unpack_ratio", "min_free_space"]
        + settingKeyNames("library")
    static let scheduler = ["max_concurrent", "max_per_host", "retry_attempts", "retry_base_delay", "retry_max_delay",
                            "no_progress_timeout", "connect_timeout", "idle_timeout", "max_sync_wait"]
        + settingKeyNames("scheduler")
    static let bandwidth = ["limit", "per_transfer", "schedule"]
    static let network = ["assume", "allowed", "allow_expensive", "allow_constrained"]
    static let notifications = ["throttle", "dont_throttle"]
    static let hooks = ["on_issue_available", "timeout"]
    static let daemon = ["socket", "challenge_timeout"]
    static let credentials = [
        "match", "username", "password_env", "password_file", "token_env", "token_file",
        "private_key", "passphrase_env", "passphrase_file", "known_hosts", "ca_file",
    ]
    static let feeds = ["name", "url", "max_assets", "allowed_schemes", "refresh"]
    static let transports = ["scheme", "command", "options", "keep_alive", "ranges"]
    static let issues = ["name", "date", "assets"]
    static let assets = [
        "url", "sha256", "path", "unpack", "role", "priority",
        "allowed_networks", "allow_expensive", "allow_constrained", "options", "index", "indexed", "mirrors",
    ]

    /// Every table with its keys, as written in the file.
    static let tables: [(name: String, keys: [String])] = [
        ("library", library), ("scheduler", scheduler), ("bandwidth", bandwidth), ("network", network),
        ("notifications", notifications), ("hooks", hooks), ("daemon", daemon), ("credentials", credentials), ("feeds", feeds),
        ("transports", transports), ("issues", issues), ("issues.assets", assets),
    ]

    private static func settingKeyNames(_ table: String) -> [String] {
        settingKeys.filter { $0.table == table }.flatMap { $0.keys.map(\.name) }
    }

    /// A key whose value is set on ``Library/Configuration`` as it is.
    struct SettingKey: Sendable {
        let name: String
        /// Reads the key from its table into the configuration, when it is written.
        let read: @Sendable (TableReader, inout Library.Configuration) throws(ConfigError) -> Void

        /// A duration within `range`.
        static func duration(
            _ name: String, _ setting: any WritableKeyPath<Library.Configuration, Duration> & Sendable, in range: ClosedRange<Duration>
        ) -> SettingKey {
            SettingKey(name: name) { table, configuration throws(ConfigError) in
                if let value = try table.duration(name, in: range) { configuration[keyPath: setting] = value }
            }
        }

        /// An integer within `range`.
        static func integer(
            _ name: String, _ setting: any WritableKeyPath<Library.Configuration, Int> & Sendable, in range: ClosedRange<Int>
        ) -> SettingKey {
            SettingKey(name: name) { table, configuration throws(ConfigError) in
                guard let value = try table.int(name) else { return }
                guard range.contains(value) else {
                    throw table.error(.invalidValue, name, "expected an integer from \(range.lowerBound) to \(range.upperBound), got \(value)")
                }
                configuration[keyPath: setting] = value
            }
        }
    }
}
