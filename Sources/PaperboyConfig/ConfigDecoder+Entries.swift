import Foundation
import Paperboy
import TOMLKit

extension ConfigDecoder {
    func decodeCredentials(_ tables: [TableReader]) throws(ConfigError) -> [CredentialEntry] {
        var entries: [CredentialEntry] = []
        for table in tables {
            try table.checkKnownKeys(ConfigSchema.credentials)
            let match = try table.require(table.string("match"), "match")
            let matchURL: URL
            do {
                matchURL = try PathResolution.parseURL(match)
            } catch {
                throw table.invalid("match", error)
            }
            guard let scope = URLScope(matchURL) else {
                let problem = URLScope.problem(with: matchURL) ?? "names no host"
                throw table.error(
                    .invalidValue, "match",
                    "\"\(PathResolution.redacted(match))\" \(problem): a match is the URL of an origin, such as https://cdn.example.com/ or sftp://files.example.com/"
                )
            }
            // The same origin and path written twice (`https://a/` and `HTTPS://A:443`) is a duplicate.
            if let earlier = entries.first(where: { $0.scope == scope }) {
                throw table.error(
                    .duplicate, "match",
                    "duplicate credentials for \"\(match)\" (first defined on line \(earlier.line ?? 1))"
                )
            }
            entries.append(CredentialEntry(
                match: match,
                matchURL: matchURL,
                username: try table.string("username"),
                password: try secret(table, "password"),
                token: try secret(table, "token"),
                privateKey: try filePath(table, "private_key"),
                passphrase: try secret(table, "passphrase"),
                knownHosts: try filePath(table, "known_hosts"),
                caFile: try filePath(table, "ca_file"),
                line: context.line(for: table.path)
            ))
        }
        return entries
    }

    /// Reads `<name>_env` or `<name>_file`: at most one, the variable set, the file readable.
    private func secret(_ table: TableReader, _ name: String) throws(ConfigError) -> Secret? {
        let envKey = name + "_env", fileKey = name + "_file"
        let variable = try table.string(envKey)
        let file = try table.string(fileKey)
        if variable != nil && file != nil {
            let later = context.line(for: table.keyPath(envKey)) > context.line(for: table.keyPath(fileKey))
                ? envKey : fileKey
            throw table.error(.invalidValue, later, "set at most one of '\(envKey)' and '\(fileKey)'")
        }
        if let variable {
            guard !variable.isEmpty else {
                throw table.error(.invalidValue, envKey, "expected an environment variable name, got \"\"")
            }
            guard let value = context.environment[variable] else {
                throw table.error(.missingEnvironmentVariable, envKey, "environment variable '\(variable)' is not set")
            }
            return Secret(environmentVariable: variable, value: value)
        }
        if let file {
            guard !file.isEmpty else { throw table.error(.invalidValue, fileKey, "expected a file path, got \"\"") }
            let url = context.paths.fileURL(forPath: file)
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory), !isDirectory.boolValue,
                  FileManager.default.isReadableFile(atPath: url.path)
            else {
                throw table.error(
                    .missingSecretFile, fileKey, "secret file '\(url.path)' does not exist or is not readable"
                )
            }
            return Secret(file: url)
        }
        return nil
    }

    private func filePath(_ table: TableReader, _ key: String) throws(ConfigError) -> URL? {
        guard let path = try table.string(key) else { return nil }
        guard !path.isEmpty else { throw table.error(.invalidValue, key, "expected a file path, got \"\"") }
        return context.paths.fileURL(forPath: path)
    }

    func decodeFeeds(_ tables: [TableReader]) throws(ConfigError) -> [FeedEntry] {
        var entries: [FeedEntry] = []
        for table in tables {
            try table.checkKnownKeys(ConfigSchema.feeds)
            let name = try table.require(table.string("name"), "name")
            let text = try table.require(table.string("url"), "url")
            guard !name.isEmpty else { throw table.error(.invalidValue, "name", "expected a name, got \"\"") }
            if let earlier = entries.first(where: { $0.name == name }) {
                throw table.error(
                    .duplicate, "name", "duplicate feed name \"\(name)\" (first defined on line \(earlier.line ?? 1))"
                )
            }
            let url = try sourceURL(text, in: table)
            let maxAssets = try table.positiveInt("max_assets") ?? Catalog.Limits.defaultMaxAssets
            let schemes = try table.strings("allowed_schemes") ?? []
            for (index, scheme) in schemes.enumerated() {
                guard PathResolution.hasScheme(scheme + ":"), !scheme.contains(":") else {
                    throw context.error(.invalidValue, at: table.keyPath("allowed_schemes") + "[\(index)]",
                                        "expected a URL scheme such as \"sftp\", got \"\(scheme)\"")
                }
                if scheme.lowercased() == "file" {
                    throw context.error(.invalidValue, at: table.keyPath("allowed_schemes") + "[\(index)]",
                                        "a catalog names local files only when it is a local file itself")
                }
            }
            let refresh = try table.duration("refresh", in: FeedEntry.minimumRefresh...FeedEntry.maximumRefresh)
            entries.append(FeedEntry(name: name, url: url, maxAssets: maxAssets, allowedSchemes: schemes,
                                     refresh: refresh, line: context.line(for: table.path)))
        }
        return entries
    }

    /// The `url` of an asset or feed: a URL or a path. A password in it is refused: the URL of
    /// an asset is stored in the library's database, and a secret belongs in `[[credentials]]`.
    func sourceURL(_ text: String, in table: TableReader, key: String = "url") throws(ConfigError) -> URL {
        let url: URL
        do {
            url = try context.paths.url(for: text)
        } catch {
            throw table.invalid(key, error)
        }
        guard url.password == nil else {
            throw table.error(
                .invalidValue, key,
                "\"\(PathResolution.redacted(text))\" holds a password (user:password@); "
                    + "put it in a [[credentials]] entry (password_env or password_file) whose match is the URL's origin")
        }
        return url
    }

    func decodeTransports(_ tables: [TableReader]) throws(ConfigError) -> [TransportEntry] {
        var entries: [TransportEntry] = []
        for table in tables {
            try table.checkKnownKeys(ConfigSchema.transports)
            let scheme = try table.require(table.string("scheme"), "scheme").lowercased()
            var command = try table.require(table.strings("command", nonEmpty: true), "command")
            guard PathResolution.hasScheme(scheme + ":"), !scheme.contains(":") else {
                throw table.error(.invalidValue, "scheme", "expected a URL scheme such as \"ipfs\", got \"\(scheme)\"")
            }
            if let earlier = entries.first(where: { $0.scheme == scheme }) {
                throw table.error(
                    .duplicate, "scheme",
                    "duplicate transport for scheme \"\(scheme)\" (first defined on line \(earlier.line ?? 1))"
                )
            }
            guard !command[0].isEmpty else {
                throw context.error(.invalidValue, at: table.keyPath("command") + "[0]", "expected an executable, got \"\"")
            }
            if command[0].contains("/") || command[0].hasPrefix("~") {
                command[0] = context.paths.fileURL(forPath: command[0]).path
            }
            var entry = TransportEntry(
                scheme: scheme, command: command, options: try table.options("options"),
                keepAlive: try table.duration("keep_alive") ?? .seconds(30), line: context.line(for: table.path))
            entry.ranges = try table.bool("ranges") ?? false
            entries.append(entry)
        }
        return entries
    }
}
