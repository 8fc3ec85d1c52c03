import Foundation
import Paperboy
import PaperboySFTP
import PaperboyTestServers
import PaperboyTesting
import Synchronization
import Testing

/// A running sshd with a client key it accepts and a known_hosts file that trusts it.
final class SFTPServerSetup: @unchecked Sendable {
    let server: SSHServer
    let folder = TempFolder()
    let clientKey: URL
    let knownHosts: URL

    /// Starts sshd, or returns nil (skipping) when it is not installed; under `CI=true` a
    /// missing sshd is a failure.
    static func start(trusted: Bool = true, extraConfiguration: String = "",
                      sourceLocation: SourceLocation = #_sourceLocation) async throws -> SFTPServerSetup? {
        guard let binary = SSHServer.binary, SSHServer.keygen != nil else {
            if ProcessInfo.processInfo.environment["CI"] == "true" {
                Testing.Issue.record("sshd is not installed: CI must install openssh-server", sourceLocation: sourceLocation)
            } else {
                print("skipping SFTP test: sshd (openssh-server) is not installed")
            }
            return nil
        }
        return try await offThePool {
            try SFTPServerSetup(server: SSHServer(binary: binary, extraConfiguration: extraConfiguration), trusted: trusted)
        }
    }

    private init(server: SSHServer, trusted: Bool) throws {
        self.server = server
        clientKey = try server.makeClientKey(named: "client_ed25519")
        knownHosts = folder.file("known_hosts")
        try (trusted ? server.knownHostsLine + "\n" : "").write(to: knownHosts, atomically: true, encoding: .utf8)
    }

    /// Publishes `data` as `name` and returns its URL.
    func publish(_ data: Data, as name: String, user: String? = nil) throws -> URL {
        try data.write(to: server.file(name))
        chmod(server.file(name).path, 0o644)
        return server.url(name, user: user)
    }

    /// A transport trusting this server and using no key unless a challenge names one.
    func transport(
        identityFiles: [URL] = [], recordsKeys: Bool = true, readSize: Int = 1 << 20, splitThreshold: Int64? = 64 << 20
    ) -> SFTPTransport {
        SFTPTransport(configuration: .init(
            knownHostsFile: knownHosts, recordsAcceptedHostKeys: recordsKeys, identityFiles: identityFiles, usesAgent: false,
            readSize: readSize, splitThreshold: splitThreshold))
    }

    /// Answers publickey challenges with the client key.
    var keyAnswer: @Sendable (AuthChallenge) -> AuthChallengeDisposition {
        let key = clientKey
        return { challenge in
            challenge.kind == .sshPublicKey ? .useCredential(Credential(privateKey: key)) : .performDefaultHandling
        }
    }

    /// A library configuration for tests whose credentials log in to this server with the
    /// client key.
    func configuration(attempts: Int = 1, idleTimeout: Duration = .seconds(10)) -> Library.Configuration {
        var configuration = Library.Configuration.forTests(attempts: attempts, idleTimeout: idleTimeout)
        configuration.credentials = OriginCredentials([
            .init(scope: URLScope(string: "sftp://127.0.0.1:\(server.port)/")!, credential: Credential(privateKey: clientKey)),
        ])
        return configuration
    }

    /// Makes a client key the server accepts (ssh-keygen runs off the cooperative pool).
    func makeClientKey(named name: String, type: String, passphrase: String) async throws -> URL {
        let server = server
        return try await offThePool { try server.makeClientKey(named: name, type: type, passphrase: passphrase) }
    }

    /// Successful public key logins so far, from sshd's log (one per SSH connection).
    var acceptedLogins: Int {
        server.log.components(separatedBy: "Accepted publickey").count - 1
    }
}
