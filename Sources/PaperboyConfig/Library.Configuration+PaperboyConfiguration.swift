import Foundation
import Paperboy

extension Library.Configuration {
    /// The library configuration a `paperboy.toml` file describes: its `[library]`, `[scheduler]`,
    /// `[bandwidth]`, `[network]` and `[[credentials]]` settings over the library's defaults.
    ///
    /// `paperboy sync`, `paperboy daemon` and an app that reads the same file open their library
    /// with it. File secrets (`*_file`) are read now, so a configuration made again picks up a
    /// rotated password.
    ///
    /// - Throws: ``ConfigError`` naming a secret file that cannot be read (never its contents).
    public init(_ config: PaperboyConfiguration) throws(ConfigError) {
        // The settings the file's keys set as they are (``ConfigSchema/settingKeys``).
        self = config.librarySettings
        maxConcurrentTransfers = config.scheduler.maxConcurrent
        maxTransfersPerHost = config.scheduler.maxPerHost
        retry = RetryPolicy(
            maxAttempts: config.scheduler.retryAttempts, baseDelay: config.scheduler.retryBaseDelay,
            maxDelay: config.scheduler.retryMaxDelay, noProgressTimeout: config.scheduler.noProgressTimeout)
        connectTimeout = config.scheduler.connectTimeout
        idleTimeout = config.scheduler.idleTimeout
        var rules: [OriginCredentials.Rule] = []
        for entry in config.credentials {
            let credential = Credential(
                user: entry.username, password: try entry.password?.reveal(), token: try entry.token?.reveal(),
                privateKey: entry.privateKey, passphrase: try entry.passphrase?.reveal())
            // The configuration refuses a match without a host, so every entry has a scope.
            if let scope = entry.scope { rules.append(OriginCredentials.Rule(scope: scope, credential: credential)) }
        }
        if !rules.isEmpty { credentials = OriginCredentials(rules) }
        bandwidthLimit = config.bandwidth.limit?.bytesPerSecond
        perTransferBandwidthLimit = config.bandwidth.perTransfer?.bytesPerSecond
        bandwidthSchedule = config.bandwidth.librarySchedule
        mode = config.library.mode == .background ? .background : .foreground
        syncsToDisk = config.library.syncToDisk
        maxUnpackedBytes = config.library.maxUnpackedSize
        maxUnpackRatio = config.library.maxUnpackRatio
        minFreeSpace = config.library.minFreeSpace
        networkPolicy = NetworkPolicy(
            allowedKinds: Set(config.network.allowed.compactMap { NetworkStatus.Kind(rawValue: $0.rawValue) }),
            allowsExpensive: config.network.allowExpensive,
            allowsConstrained: config.network.allowConstrained,
            allowsRoaming: config.library.mode == .foreground)
        // PAPERBOY_NETWORK (read by the library) wins over `assume`: it is the more specific.
        if let assume = config.network.assume, (ProcessInfo.processInfo.environment["PAPERBOY_NETWORK"] ?? "").isEmpty {
            networkMonitor = FixedNetworkMonitor(NetworkStatus(
                kind: NetworkStatus.Kind(rawValue: assume.interfaceClass.rawValue) ?? .other,
                isExpensive: assume.attributes.contains(.expensive),
                isConstrained: assume.attributes.contains(.constrained),
                isRoaming: assume.attributes.contains(.roaming)))
        }
    }
}

extension BandwidthSettings {
    /// ``schedule`` as the library takes it (``Library/Configuration/bandwidthSchedule``); `nil`
    /// when it is empty.
    public var librarySchedule: BandwidthSchedule? {
        schedule.isEmpty ? nil : BandwidthSchedule(schedule.map {
            BandwidthSchedule.Entry(minuteOfDay: $0.minuteOfDay, bytesPerSecond: $0.rate?.bytesPerSecond)
        })
    }
}
