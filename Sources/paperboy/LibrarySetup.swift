import ArgumentParser
import Foundation
import Paperboy
import PaperboyConfig

extension PaperboyConfiguration {
    /// The library configuration of this file (``Library/Configuration/init(_:)``, in
    /// PaperboyConfig); a secret file that cannot be read is said on standard error, naming the
    /// file, and the command exits with 2, as for any other configuration error.
    func libraryConfiguration() throws -> Library.Configuration {
        do {
            return try Library.Configuration(self)
        } catch {
            Console.error(error.description)
            throw ExitCode(2)
        }
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
