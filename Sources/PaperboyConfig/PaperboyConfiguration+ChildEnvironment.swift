import Foundation

extension PaperboyConfiguration {
    /// The environment variables that hold secrets: those named by a `*_env` key
    /// (`password_env`, `token_env`, `passphrase_env` of every `[[credentials]]` entry).
    public var secretEnvironmentVariables: Set<String> {
        var names: Set<String> = []
        for entry in credentials {
            for secret in [entry.password, entry.token, entry.passphrase] {
                if case .environment(let name)? = secret?.source { names.insert(name) }
            }
        }
        return names
    }

    /// The environment for child processes (hooks, transport helpers): `environment` without
    /// ``secretEnvironmentVariables``. Helpers get credentials only by answering challenges.
    ///
    /// - Parameter environment: the environment to start from (default: this process's).
    public func childEnvironment(
        from environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> [String: String] {
        let secrets = secretEnvironmentVariables
        return environment.filter { !secrets.contains($0.key) }
    }
}
