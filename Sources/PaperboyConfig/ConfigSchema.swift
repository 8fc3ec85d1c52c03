/// The keys each table may hold; anything else is an unknown key or table.
enum ConfigSchema {
    static let topLevel = [
        "library", "scheduler", "bandwidth", "network", "notifications", "hooks", "daemon",
        "credentials", "feeds", "transports", "issues",
    ]
    static let library = ["path", "mode", "sync_to_disk", "max_unpacked_size", "max_unpack_ratio", "min_free_space"]
    static let scheduler = ["max_concurrent", "max_per_host", "retry_attempts", "retry_base_delay", "retry_max_delay",
                            "no_progress_timeout", "connect_timeout", "idle_timeout", "max_sync_wait"]
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
    static let transports = ["scheme", "command", "options", "keep_alive"]
    static let issues = ["name", "date", "assets"]
    static let assets = [
        "url", "sha256", "path", "unpack", "role", "priority",
        "allowed_networks", "allow_expensive", "allow_constrained", "options",
    ]

    /// Every table with its keys, as written in the file.
    static let tables: [(name: String, keys: [String])] = [
        ("library", library), ("scheduler", scheduler), ("bandwidth", bandwidth), ("network", network),
        ("notifications", notifications), ("hooks", hooks), ("daemon", daemon), ("credentials", credentials), ("feeds", feeds),
        ("transports", transports), ("issues", issues), ("issues.assets", assets),
    ]
}
