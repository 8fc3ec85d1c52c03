import Foundation
import Paperboy
import TOMLKit

/// A `paperboy.toml` file, read into typed and validated values.
///
/// Absent sections take their defaults; relative paths are resolved against the file's
/// folder. Every value's line can be looked up with ``line(for:)``.
public struct PaperboyConfiguration: Sendable {
    /// The file the configuration was read from.
    public var fileURL: URL
    /// The `[library]` section.
    public var library: LibrarySettings
    /// The `[scheduler]` section.
    public var scheduler: SchedulerSettings
    /// The `[bandwidth]` section.
    public var bandwidth: BandwidthSettings
    /// The `[network]` section.
    public var network: NetworkSettings
    /// The `[notifications]` section.
    public var notifications: NotificationSettings
    /// The `[hooks]` section.
    public var hooks: HookSettings
    /// The `[daemon]` section.
    public var daemon: DaemonSettings
    /// The `[[credentials]]` entries, in file order.
    public var credentials: [CredentialEntry]
    /// The `[[feeds]]` entries, in file order.
    public var feeds: [FeedEntry]
    /// The `[[transports]]` entries, in file order.
    public var transports: [TransportEntry]
    /// The `[[issues]]` entries, in file order.
    public var issues: [IssueEntry]
    /// Where each key was written.
    public var sourceMap: ConfigSourceMap
    /// The ``Library/Configuration`` settings the file's keys set as they are (such as
    /// `[library] checkpoint_interval`, see ``ConfigSchema/settingKeys``), over the library's
    /// defaults: ``Library/Configuration/init(_:)`` starts from them.
    var librarySettings = Library.Configuration()

    /// Creates a configuration from values; ``load(contentsOf:environment:)`` is the usual way.
    public init(
        fileURL: URL,
        library: LibrarySettings,
        scheduler: SchedulerSettings = SchedulerSettings(),
        bandwidth: BandwidthSettings = BandwidthSettings(),
        network: NetworkSettings = NetworkSettings(),
        notifications: NotificationSettings = NotificationSettings(),
        hooks: HookSettings = HookSettings(),
        daemon: DaemonSettings? = nil,
        credentials: [CredentialEntry] = [],
        feeds: [FeedEntry] = [],
        transports: [TransportEntry] = [],
        issues: [IssueEntry] = [],
        sourceMap: ConfigSourceMap = ConfigSourceMap()
    ) {
        self.fileURL = fileURL
        self.library = library
        self.scheduler = scheduler
        self.bandwidth = bandwidth
        self.network = network
        self.notifications = notifications
        self.hooks = hooks
        self.daemon = daemon ?? DaemonSettings(socket: DaemonSettings.defaultSocket(
            environment: ProcessInfo.processInfo.environment, library: library.path))
        self.credentials = credentials
        self.feeds = feeds
        self.transports = transports
        self.issues = issues
        self.sourceMap = sourceMap
    }

    /// The line a key path was written on, such as `scheduler.max_concurrent` or
    /// `issues[0].assets[1].url`, falling back to its table's line.
    public func line(for keyPath: String) -> Int? {
        sourceMap.line(for: keyPath)
    }

    /// Reads and validates a configuration file.
    ///
    /// - Parameters:
    ///   - url: The `paperboy.toml` file.
    ///   - environment: Where `*_env` secrets and `HOME`/`XDG_DATA_HOME` are looked up.
    /// - Throws: ``ConfigError`` naming the file, line and key of the first problem.
    public static func load(
        contentsOf url: URL,
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(ConfigError) -> PaperboyConfiguration {
        // The bytes are let go once they are text: both alive while parsing was 15 MiB for a
        // configuration of 100,000 assets.
        return try decode(readText(url), fileURL: url, environment: environment)
    }

    private static func readText(_ url: URL) throws(ConfigError) -> String {
        let data: Data
        do {
            data = try Data(contentsOf: url)
        } catch {
            throw ConfigError(
                code: .unreadable, file: url, message: "cannot read configuration file '\(url.path)'",
                underlying: error
            )
        }
        guard let text = String(data: data, encoding: .utf8) else {
            throw ConfigError(code: .unreadable, file: url, message: "configuration file is not UTF-8")
        }
        return text
    }

    /// Parses and validates configuration text as if read from `fileURL`; writes nothing.
    ///
    /// - Parameters:
    ///   - text: The TOML text.
    ///   - fileURL: Where the text comes from: errors name it, relative paths start in its folder.
    ///   - environment: Where `*_env` secrets and `HOME`/`XDG_DATA_HOME` are looked up.
    /// - Throws: ``ConfigError`` naming the file, line and key of the first problem.
    public static func parse(
        _ text: String,
        fileURL: URL,
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(ConfigError) -> PaperboyConfiguration {
        try decode(text, fileURL: fileURL, environment: environment)
    }

    /// ``parse(_:fileURL:environment:)``, letting the text go once it is parsed and scanned
    /// (7.6 MiB for a configuration of 100,000 assets, while its entries are decoded).
    private static func decode(
        _ text: consuming String, fileURL: URL, environment: [String: String]
    ) throws(ConfigError) -> PaperboyConfiguration {
        if let nul = text.utf8.firstIndex(of: 0) {
            // toml++ reads a C string and would silently stop at a NUL.
            let line = text.utf8[..<nul].filter { $0 == UInt8(ascii: "\n") }.count + 1
            throw ConfigError(code: .syntax, file: fileURL, line: line, message: "NUL character in configuration file")
        }
        let root: TOMLTable
        do {
            root = try TOMLTable(string: copy text)
        } catch let error as TOMLParseError {
            throw ConfigError(
                code: .syntax, file: fileURL, line: error.source.begin.line, column: error.source.begin.column,
                message: error.description, underlying: error
            )
        } catch {
            throw ConfigError(code: .syntax, file: fileURL, message: "\(error)", underlying: error)
        }
        let context = DecodeContext(
            fileURL: fileURL,
            sourceMap: ConfigSourceMap(scanning: copy text),
            environment: environment,
            paths: PathResolution(fileURL: fileURL, environment: environment)
        )
        text = ""
        // TOMLKit never frees a parsed document (no deinit): emptying it frees every node but the
        // root, about 33 MiB for a configuration of 100,000 assets (each issue's table is emptied
        // as soon as it is decoded, see ``ConfigDecoder/decodeIssues(_:)``).
        defer { root.clear() }
        return try ConfigDecoder(context: context).decode(TableReader(table: root, path: "", context: context))
    }

    /// Finds the configuration file to use, or `nil` when there is none.
    ///
    /// The order is: `explicit` (relative to `currentDirectory`, whether or not it exists),
    /// then `./paperboy.toml`, then `$XDG_CONFIG_HOME/paperboy/paperboy.toml` (or
    /// `~/.config/paperboy/paperboy.toml` when `XDG_CONFIG_HOME` is unset or relative),
    /// each only if it exists.
    public static func defaultConfigURL(
        explicit: String?,
        currentDirectory: URL,
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> URL? {
        let home = PathResolution.homeDirectory(environment: environment)
        if let explicit, !explicit.isEmpty {
            if explicit == "~" || explicit.hasPrefix("~/") {
                return URL(fileURLWithPath: home).appendingPathComponent(String(explicit.dropFirst(2)))
                    .standardizedFileURL
            }
            if explicit.hasPrefix("/") { return URL(fileURLWithPath: explicit).standardizedFileURL }
            return currentDirectory.appendingPathComponent(explicit).standardizedFileURL
        }
        let local = currentDirectory.appendingPathComponent("paperboy.toml")
        if FileManager.default.fileExists(atPath: local.path) { return local }
        let configHome: URL
        if let xdg = environment["XDG_CONFIG_HOME"], xdg.hasPrefix("/") {
            configHome = URL(fileURLWithPath: xdg, isDirectory: true)
        } else {
            configHome = URL(fileURLWithPath: home, isDirectory: true).appendingPathComponent(".config", isDirectory: true)
        }
        let user = configHome.appendingPathComponent("paperboy/paperboy.toml")
        return FileManager.default.fileExists(atPath: user.path) ? user : nil
    }
}
