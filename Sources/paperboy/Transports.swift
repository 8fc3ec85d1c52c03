import Foundation
import Paperboy
import PaperboyConfig
import PaperboyExec
import PaperboyFile
import PaperboyHTTP
import PaperboySFTP

/// The transports the `paperboy` tool ships, in one place.
enum Transports {
    /// The shipped transports, plus out-of-process helpers: `paperboy-transport-SCHEME` found on
    /// `PATH` for schemes that assets use and nothing shipped serves, then every `[[transports]]`
    /// entry of `config` (an explicit entry wins, even over a shipped transport). The schemes
    /// looked for are those of the configured assets and feeds, and of `extraURLs`.
    static func registry(for config: PaperboyConfiguration? = nil, extraURLs: [URL] = []) -> TransportRegistry {
        var registry = TransportRegistry([
            FileTransport(),
            HTTPTransport(),
            SFTPTransport(configuration: sftpConfiguration(for: config)),
        ])
        guard let config else { return registry }
        // Helpers never see the variables that hold secrets; they answer challenges instead.
        let environment = config.childEnvironment()
        let configured = Set(config.transports.map(\.scheme))
        // Schemes read from the assets' text, without a URL per asset (100,000 of them were
        // 30 MiB, the peak of a first sync).
        var used = Set((config.feeds.map(\.url) + extraURLs).compactMap { $0.scheme?.lowercased() })
        for issue in config.issues {
            for asset in issue.assets {
                if let colon = asset.urlString.firstIndex(of: ":") { used.insert(asset.urlString[..<colon].lowercased()) }
            }
        }
        // Idle helpers are kept per origin up to the per-host limit: a host's transfers never
        // start more helpers (logins) than run at once.
        let perHost = config.scheduler.maxPerHost
        for scheme in used.subtracting(registry.schemes).subtracting(configured).sorted() {
            if let helper = ExecTransport.discover(scheme: scheme, environment: environment, maxIdleHelpers: perHost) {
                registry.register(helper)
            }
        }
        for entry in config.transports {
            registry.register(ExecTransport(scheme: entry.scheme, command: entry.command,
                                            capabilities: ExecTransport.helperCapabilities(ranges: entry.ranges),
                                            environment: environment, maxIdleHelpers: perHost, keepAlive: entry.keepAlive))
        }
        return registry
    }

    /// SFTP settings from the `[[credentials]]` entries matching `sftp:` URLs: their `username`
    /// (the login when a URL names none) and `known_hosts` file. Keys, passphrases and passwords
    /// reach the transport through the core's credential challenges.
    static func sftpConfiguration(for config: PaperboyConfiguration?) -> SFTPTransport.Configuration {
        let rules = (config?.credentials ?? []).compactMap { entry in
            entry.scope.flatMap { $0.scheme == "sftp" ? SFTPTransport.HostRule(scope: $0, user: entry.username, knownHostsFile: entry.knownHosts) : nil }
        }
        return SFTPTransport.Configuration(hosts: rules)
    }
}
