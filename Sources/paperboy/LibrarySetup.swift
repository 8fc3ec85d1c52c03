import ArgumentParser
import Foundation
import Logging
import Paperboy
import PaperboyConfig

/// Turns a configuration file into a library configuration.
extension PaperboyConfiguration {
    func libraryConfiguration() throws -> Library.Configuration {
        var configuration = Library.Configuration()
        configuration.maxConcurrentTransfers = scheduler.maxConcurrent
        configuration.maxTransfersPerHost = scheduler.maxPerHost
        configuration.retry = RetryPolicy(
            maxAttempts: scheduler.retryAttempts, baseDelay: scheduler.retryBaseDelay, maxDelay: scheduler.retryMaxDelay,
            noProgressTimeout: scheduler.noProgressTimeout)
        configuration.connectTimeout = scheduler.connectTimeout
        configuration.idleTimeout = scheduler.idleTimeout
        var rules: [OriginCredentials.Rule] = []
        do {
            for entry in credentials {
                let credential = Credential(
                    user: entry.username, password: try entry.password?.reveal(), token: try entry.token?.reveal(),
                    privateKey: entry.privateKey, passphrase: try entry.passphrase?.reveal())
                // The configuration refuses a match without a host, so every entry has a scope.
                if let scope = entry.scope { rules.append(OriginCredentials.Rule(scope: scope, credential: credential)) }
            }
        } catch {
            Console.error(error.description)
            throw ExitCode(2)
        }
        if !rules.isEmpty { configuration.credentials = OriginCredentials(rules) }
        configuration.bandwidthLimit = bandwidth.limit?.bytesPerSecond
        configuration.perTransferBandwidthLimit = bandwidth.perTransfer?.bytesPerSecond
        if !bandwidth.schedule.isEmpty {
            configuration.bandwidthSchedule = BandwidthSchedule(bandwidth.schedule.map {
                BandwidthSchedule.Entry(minuteOfDay: $0.minuteOfDay, bytesPerSecond: $0.rate?.bytesPerSecond)
            })
        }
        configuration.mode = library.mode == .background ? .background : .foreground
        configuration.syncsToDisk = library.syncToDisk
        configuration.maxUnpackedBytes = library.maxUnpackedSize
        configuration.maxUnpackRatio = library.maxUnpackRatio
        configuration.minFreeSpace = library.minFreeSpace
        configuration.networkPolicy = NetworkPolicy(
            allowedKinds: Set(network.allowed.compactMap { NetworkStatus.Kind(rawValue: $0.rawValue) }),
            allowsExpensive: network.allowExpensive,
            allowsConstrained: network.allowConstrained,
            allowsRoaming: library.mode == .foreground)
        // PAPERBOY_NETWORK (read by the library) wins over `assume`: it is the more specific.
        if let assume = network.assume, (ProcessInfo.processInfo.environment["PAPERBOY_NETWORK"] ?? "").isEmpty {
            configuration.networkMonitor = FixedNetworkMonitor(NetworkStatus(
                kind: NetworkStatus.Kind(rawValue: assume.interfaceClass.rawValue) ?? .other,
                isExpensive: assume.attributes.contains(.expensive),
                isConstrained: assume.attributes.contains(.constrained),
                isRoaming: assume.attributes.contains(.roaming)))
        }
        configuration.logger = Logger(label: "paperboy")
        return configuration
    }
}

extension PaperboyConfiguration {
    /// Transport options for `url`: the `options` of the `[[transports]]` entry for its scheme,
    /// then the asset's own (`options`, which win), then the files named by the most specific
    /// `[[credentials]]` entry covering it (`ca_file`, `known_hosts`, `private_key`: paths, not
    /// secrets; the other options may not use those keys, in any spelling: ``OptionKey``). A credential's user name and secrets
    /// reach transports only through challenges.
    func transportOptions(for url: URL, asset: [String: String] = [:]) -> [String: String] {
        let scheme = url.scheme?.lowercased()
        var options = transports.first { $0.scheme == scheme }?.options ?? [:]
        options.merge(asset) { $1 }
        // Refused at load; stored options of an older library may still hold one.
        options = OptionKey.withoutLookAlikes(options)
        let scoped = credentials.compactMap { entry in entry.scope.map { (entry, $0) } }
        guard let (entry, _) = URLScope.mostSpecific(scoped, for: url, scope: \.1) else { return options }
        if let caFile = entry.caFile { options["ca_file"] = caFile.path }
        if let knownHosts = entry.knownHosts { options["known_hosts"] = knownHosts.path }
        if let privateKey = entry.privateKey { options["private_key"] = privateKey.path }
        return options
    }
}
