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
            maxAttempts: scheduler.retryAttempts, baseDelay: scheduler.retryBaseDelay, maxDelay: scheduler.retryMaxDelay)
        var rules: [PrefixCredentials.Rule] = []
        do {
            for entry in credentials {
                let credential = Credential(
                    user: entry.username, password: try entry.password?.reveal(), token: try entry.token?.reveal(),
                    privateKey: entry.privateKey, passphrase: try entry.passphrase?.reveal())
                rules.append(PrefixCredentials.Rule(prefix: entry.match, credential: credential))
            }
        } catch {
            Console.error(error.description)
            throw ExitCode(2)
        }
        if !rules.isEmpty { configuration.credentials = PrefixCredentials(rules) }
        configuration.logger = Logger(label: "paperboy")
        return configuration
    }
}
