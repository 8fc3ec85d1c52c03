import Foundation
import Paperboy
import TOMLKit

/// Turns a parsed TOML document into a ``PaperboyConfiguration``, section by section.
struct ConfigDecoder {
    let context: DecodeContext

    func decode(_ root: TableReader) throws(ConfigError) -> PaperboyConfiguration {
        try root.checkKnownKeys(ConfigSchema.topLevel)
        let library = try decodeLibrary(root.section("library"))
        var configuration = PaperboyConfiguration(
            fileURL: context.fileURL,
            library: library,
            scheduler: try decodeScheduler(root.section("scheduler")),
            bandwidth: try decodeBandwidth(root.section("bandwidth")),
            network: try decodeNetwork(root.section("network"), mode: library.mode),
            notifications: try decodeNotifications(root.section("notifications")),
            hooks: try decodeHooks(root.section("hooks")),
            daemon: try decodeDaemon(root.section("daemon"), library: library),
            credentials: try decodeCredentials(root.tableArray("credentials")),
            feeds: try decodeFeeds(root.tableArray("feeds")),
            transports: try decodeTransports(root.tableArray("transports")),
            issues: try decodeIssues(root.tableArray("issues")),
            sourceMap: context.sourceMap
        )
        for (name, keys) in ConfigSchema.settingKeys {
            guard let table = try root.section(name) else { continue }
            for key in keys { try key.read(table, &configuration.librarySettings) }
        }
        return configuration
    }

    private func decodeLibrary(_ table: TableReader?) throws(ConfigError) -> LibrarySettings {
        var settings = LibrarySettings(path: LibrarySettings.defaultPath(environment: context.environment))
        guard let table else { return settings }
        try table.checkKnownKeys(ConfigSchema.library)
        if let path = try table.string("path") {
            guard !path.isEmpty else { throw table.error(.invalidValue, "path", "expected a folder path, got \"\"") }
            settings.path = URL(fileURLWithPath: context.paths.fileURL(forPath: path).path, isDirectory: true)
        }
        settings.mode = try table.choice("mode", of: LibrarySettings.Mode.self) ?? settings.mode
        settings.syncToDisk = try table.bool("sync_to_disk") ?? settings.syncToDisk
        settings.maxUnpackedSize = try table.size("max_unpacked_size") ?? settings.maxUnpackedSize
        settings.maxUnpackRatio = try table.positiveInt("max_unpack_ratio") ?? settings.maxUnpackRatio
        settings.minFreeSpace = try freeSpaceFloor("min_free_space", in: table) ?? settings.minFreeSpace
        return settings
    }

    /// A size (`"512MiB"`, a number of bytes) or a percentage of the file system (`"2%"`, more
    /// than 0 and less than 100).
    private func freeSpaceFloor(_ key: String, in table: TableReader) throws(ConfigError) -> FreeSpaceFloor? {
        guard let text = table.value(key)?.string, text.hasSuffix("%") else {
            return try table.size(key).map { FreeSpaceFloor.bytes($0) }
        }
        let number = text.dropLast().trimmingCharacters(in: .whitespaces)
        guard let percent = Double(number), percent.isFinite, percent > 0, percent < 100, !number.hasPrefix("+") else {
            throw table.error(.invalidValue, key, "expected a percentage of the file system from 0 to 100, such as \"2%\", or a size such as \"512MiB\", got \"\(text)\"")
        }
        return .percent(percent)
    }

    private func decodeScheduler(_ table: TableReader?) throws(ConfigError) -> SchedulerSettings {
        var settings = SchedulerSettings()
        guard let table else { return settings }
        try table.checkKnownKeys(ConfigSchema.scheduler)
        settings.maxConcurrent = try table.positiveInt("max_concurrent") ?? settings.maxConcurrent
        settings.maxPerHost = try table.positiveInt("max_per_host") ?? settings.maxPerHost
        settings.retryAttempts = try table.positiveInt("retry_attempts") ?? settings.retryAttempts
        settings.retryBaseDelay = try table.duration("retry_base_delay") ?? settings.retryBaseDelay
        settings.retryMaxDelay = try table.duration("retry_max_delay") ?? settings.retryMaxDelay
        if try table.string("no_progress_timeout") != "off" {
            settings.noProgressTimeout = try positiveDuration("no_progress_timeout", in: table) ?? settings.noProgressTimeout
        }
        settings.connectTimeout = try timeout("connect_timeout", in: table) ?? settings.connectTimeout
        settings.idleTimeout = try timeout("idle_timeout", in: table) ?? settings.idleTimeout
        settings.maxSyncWait = try table.duration("max_sync_wait") ?? settings.maxSyncWait
        if settings.retryBaseDelay > settings.retryMaxDelay {
            let key = table.value("retry_max_delay") != nil ? "retry_max_delay" : "retry_base_delay"
            throw table.error(
                .invalidValue, key,
                "retry_base_delay (\(DurationParser.string(for: settings.retryBaseDelay))) is longer than "
                    + "retry_max_delay (\(DurationParser.string(for: settings.retryMaxDelay)))"
            )
        }
        return settings
    }

    /// A duration longer than zero.
    private func positiveDuration(_ key: String, in table: TableReader) throws(ConfigError) -> Duration? {
        guard let duration = try table.duration(key) else { return nil }
        guard duration > .zero else {
            throw table.error(.invalidValue, key, "\(key) must be longer than 0s, got \(DurationParser.string(for: duration))")
        }
        return duration
    }

    /// A duration of at least one second: transports check for stalls a few times a second, so a
    /// shorter timeout would not be kept, and messages give timeouts in whole seconds.
    private func timeout(_ key: String, in table: TableReader) throws(ConfigError) -> Duration? {
        guard let timeout = try table.duration(key) else { return nil }
        guard timeout >= .seconds(1) else {
            throw table.error(.invalidValue, key, "\(key) must be at least 1s, got \(DurationParser.string(for: timeout))")
        }
        return timeout
    }

    private func decodeBandwidth(_ table: TableReader?) throws(ConfigError) -> BandwidthSettings {
        var settings = BandwidthSettings()
        guard let table else { return settings }
        try table.checkKnownKeys(ConfigSchema.bandwidth)
        if let limit = try table.rate("limit") { settings.limit = limit }
        if let perTransfer = try table.rate("per_transfer") { settings.perTransfer = perTransfer }
        for (index, text) in (try table.strings("schedule") ?? []).enumerated() {
            let keyPath = table.keyPath("schedule") + "[\(index)]"
            var entry: BandwidthScheduleEntry
            do {
                entry = try BandwidthScheduleEntry.parse(text)
            } catch {
                throw context.error(.invalidValue, at: keyPath, error.message)
            }
            entry.line = context.line(for: keyPath)
            if let previous = settings.schedule.last, previous.minuteOfDay >= entry.minuteOfDay {
                throw context.error(
                    .invalidValue, at: keyPath,
                    "schedule times must be strictly increasing, but \"\(text)\" does not come after "
                        + "\(Self.clock(previous.minuteOfDay))"
                )
            }
            settings.schedule.append(entry)
        }
        return settings
    }

    private static func clock(_ minuteOfDay: Int) -> String {
        let hours = minuteOfDay / 60, minutes = minuteOfDay % 60
        return (hours < 10 ? "0" : "") + "\(hours):" + (minutes < 10 ? "0" : "") + "\(minutes)"
    }

    private func decodeNetwork(_ table: TableReader?, mode: LibrarySettings.Mode) throws(ConfigError) -> NetworkSettings {
        var settings = NetworkSettings(allowExpensive: mode == .foreground)
        guard let table else { return settings }
        try table.checkKnownKeys(ConfigSchema.network)
        if let assume = try table.string("assume") {
            do {
                settings.assume = try NetworkSettings.Assumption.parse(assume)
            } catch {
                throw table.invalid("assume", error)
            }
        }
        settings.allowed = try interfaceClasses(table, "allowed") ?? settings.allowed
        settings.allowExpensive = try table.bool("allow_expensive") ?? settings.allowExpensive
        settings.allowConstrained = try table.bool("allow_constrained") ?? settings.allowConstrained
        return settings
    }

    func interfaceClasses(
        _ table: TableReader, _ key: String
    ) throws(ConfigError) -> Set<NetworkSettings.InterfaceClass>? {
        guard let names = try table.strings(key) else { return nil }
        var classes: Set<NetworkSettings.InterfaceClass> = []
        for (index, name) in names.enumerated() {
            guard let kind = NetworkSettings.InterfaceClass(rawValue: name) else {
                let all = NetworkSettings.InterfaceClass.allCases.map(\.rawValue)
                throw context.error(
                    .invalidValue, at: table.keyPath(key) + "[\(index)]",
                    "expected one of \(all.joined(separator: ", ")), got \"\(name)\"",
                    suggestion: EditDistance.suggestion(for: name, among: all)
                )
            }
            classes.insert(kind)
        }
        return classes
    }

    private func decodeNotifications(_ table: TableReader?) throws(ConfigError) -> NotificationSettings {
        var settings = NotificationSettings()
        guard let table else { return settings }
        try table.checkKnownKeys(ConfigSchema.notifications)
        settings.throttle = try table.duration("throttle") ?? settings.throttle
        settings.dontThrottle = try table.bool("dont_throttle") ?? settings.dontThrottle
        return settings
    }

    private func decodeHooks(_ table: TableReader?) throws(ConfigError) -> HookSettings {
        var settings = HookSettings()
        guard let table else { return settings }
        try table.checkKnownKeys(ConfigSchema.hooks)
        settings.onIssueAvailable = try table.strings("on_issue_available", nonEmpty: true)
        settings.timeout = try positiveDuration("timeout", in: table) ?? settings.timeout
        return settings
    }

    private func decodeDaemon(_ table: TableReader?, library: LibrarySettings) throws(ConfigError) -> DaemonSettings {
        var settings = DaemonSettings(socket: DaemonSettings.defaultSocket(environment: context.environment, library: library.path))
        guard let table else { return settings }
        try table.checkKnownKeys(ConfigSchema.daemon)
        if let path = try table.string("socket") {
            guard !path.isEmpty else { throw table.error(.invalidValue, "socket", "expected a socket path, got \"\"") }
            settings.socket = context.paths.fileURL(forPath: path)
            let length = settings.socket.path.utf8.count
            guard length <= 107 else {
                throw table.error(.invalidValue, "socket", "the path \(settings.socket.path) is \(length) bytes long; a Unix socket path has at most 107")
            }
        }
        settings.challengeTimeout = try timeout("challenge_timeout", in: table) ?? settings.challengeTimeout
        return settings
    }
}
