import CPaperboySSH2
import Foundation
import Paperboy

/// Brings a new ``SSHSession`` from nothing to an open SFTP channel: TCP connection, SSH
/// handshake, host-key verification, authentication, SFTP start-up.
///
/// Async code on the cooperative pool: each libssh2 call runs as a step on the session's thread,
/// and challenges are raised through the sink between steps.
struct SessionSetup: Sendable {
    let session: SSHSession
    let location: SFTPLocation
    let user: String
    let knownHosts: KnownHosts
    let configuration: SFTPTransport.Configuration
    let connectTimeout: Duration
    let idleTimeout: Duration
    let sink: any TransferSink

    var url: URL { location.url }

    func run() async throws {
        let session = session
        let url = url
        try await session.run(idleTimeout: connectTimeout + .seconds(1)) { [connectTimeout] in
            try session.connect(timeout: connectTimeout)
        }
        try await session.run(idleTimeout: connectTimeout) { () -> Void? in
            let code = libssh2_session_handshake(session.raw, session.socket)
            return try session.check(code, action: "negotiating with the SSH server", url: url)
        }
        try await verifyHostKey()
        try await authenticate()
    }

    // MARK: Host key

    private func verifyHostKey() async throws {
        let session = session
        let location = location
        let knownHosts = knownHosts
        let url = url
        let (key, verdict) = try await session.run(idleTimeout: idleTimeout) { () -> (HostKey, KnownHosts.Verdict)? in
            guard let raw = session.raw, let key = HostKey(session: raw) else {
                throw TransportError(.protocolError, "\(url.redactedString) presented no host key", url: url, isRetryable: false)
            }
            return (key, try knownHosts.check(key, host: location.host, port: location.port, session: raw, url: url))
        }
        switch verdict {
        case .match:
            return
        case .mismatch:
            throw KnownHosts.mismatchError(key, name: location.knownHostsName, file: knownHosts.file, url: url)
        case .unknown:
            let trust = ServerTrust(host: "\(location.host):\(location.port)", keyType: key.typeName,
                                    fingerprint: key.fingerprint, reason: .unknownHost)
            let answer = await sink.challenge(AuthChallenge(kind: .serverTrust, url: url, serverTrust: trust))
            guard case .useCredential(let credential) = answer, credential.trustsServer else {
                throw TransportError(
                    .untrustedServer,
                    "the host key of \(location.knownHostsName) is not in \(knownHosts.file.path) and was not accepted: "
                        + "\(key.typeName) \(key.fingerprint). Check the fingerprint with the server's administrator, "
                        + "then add it (ssh-keyscan -p \(location.port) \(location.host) >> \(knownHosts.file.path)) "
                        + "or answer the server-trust challenge with Credential.trustServer",
                    url: url, isRetryable: false)
            }
            if configuration.recordsAcceptedHostKeys {
                try knownHosts.record(key, name: location.knownHostsName)
            }
        }
    }
}

extension SSHSession {
    /// `()` for success, `nil` for "would block"; throws the mapped error otherwise (and marks the
    /// session dead when the connection itself failed). Session thread only.
    func check(_ code: Int32, action: String, url: URL, sftp: OpaquePointer? = nil) throws -> Void? {
        if code >= 0 { return () }
        if code == LIBSSH2_ERROR_EAGAIN { return nil }
        let error = TransportError.ssh2(code, session: raw, sftp: sftp, action: action, url: url)
        if TransportError.ssh2BreaksSession(code) { markDead() }
        throw error
    }

    /// The error for the last failed call on this session. Session thread only.
    func lastError(action: String, url: URL, sftp: OpaquePointer? = nil) -> TransportError {
        guard let raw else { return TransportError(.connectionLost, "SSH connection closed while \(action)", url: url) }
        let code = libssh2_session_last_errno(raw)
        if TransportError.ssh2BreaksSession(code) { markDead() }
        return TransportError.ssh2(code, session: raw, sftp: sftp, action: action, url: url)
    }
}
