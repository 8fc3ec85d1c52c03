import CPaperboySSH2
import Foundation
import Paperboy
import Synchronization

/// Authentication, in the order the server offers its methods, answered through the sink's
/// challenges (the core answers from configured credentials first, then asks the app).
extension SessionSetup {
    func authenticate() async throws {
        let session = session
        let user = user
        let url = url
        let offered = try await session.run(idleTimeout: idleTimeout) { () -> [String]? in
            if let list = libssh2_userauth_list(session.raw, user, UInt32(user.utf8.count)) {
                return String(cString: list).split(separator: ",").map(String.init)
            }
            // The "none" method was accepted: nothing to do.
            if libssh2_userauth_authenticated(session.raw) != 0 { return [] }
            try session.check(libssh2_session_last_errno(session.raw), action: "asking for authentication methods", url: url)
            return nil
        }
        if offered.isEmpty { return }

        var outcomes: [String] = []
        for method in offered {
            let outcome: MethodOutcome
            switch method {
            case "publickey": outcome = try await publicKey()
            case "password": outcome = try await password()
            case "keyboard-interactive": outcome = try await keyboardInteractive()
            default: continue
            }
            if case .accepted = outcome { return }
            if case .skipped(let why) = outcome { outcomes.append("\(method): \(why)") }
        }
        let supported = offered.filter { ["publickey", "password", "keyboard-interactive"].contains($0) }
        let detail = outcomes.isEmpty ? "" : " (\(outcomes.joined(separator: "; ")))"
        throw TransportError(
            .authenticationFailed,
            supported.isEmpty
                ? "\(user)@\(location.knownHostsName) offers no authentication method Paperboy supports (offered: \(offered.joined(separator: ", ")))"
                : "\(user)@\(location.knownHostsName) refused authentication by \(supported.joined(separator: ", "))\(detail)",
            url: url, isRetryable: false)
    }

    enum MethodOutcome {
        case accepted
        /// The method could not be used or was refused; the next one is tried.
        case skipped(String)
    }

    // MARK: publickey

    private func publicKey() async throws -> MethodOutcome {
        var keys: [URL] = []
        var passphrase: String?
        switch await sink.challenge(AuthChallenge(kind: .sshPublicKey, url: url)) {
        case .useCredential(let credential):
            if let key = credential.privateKey {
                keys = [key]
                passphrase = credential.passphrase
            }
        case .rejectProtectionSpace:
            return .skipped("declined")
        case .cancelAuthenticationChallenge:
            throw cancelled()
        case .performDefaultHandling:
            break
        }
        if let key = keys.first, try await tryKeyFile(key, passphrase: passphrase) { return .accepted }
        if configuration.usesAgent, let socket = ProcessInfo.processInfo.environment["SSH_AUTH_SOCK"], !socket.isEmpty,
           try await tryAgent() {
            return .accepted
        }
        if keys.isEmpty {
            for key in configuration.identityFiles where try await tryKeyFile(key, passphrase: nil) { return .accepted }
        }
        return .skipped(keys.isEmpty && configuration.identityFiles.isEmpty ? "no key file" : "keys refused")
    }

    /// Offers one key file; asks for its passphrase through challenges when it is encrypted.
    private func tryKeyFile(_ key: URL, passphrase: String?) async throws -> Bool {
        let session = session
        let user = user
        let url = url
        let path = (key.path as NSString).expandingTildeInPath
        guard FileManager.default.isReadableFile(atPath: path) else {
            throw TransportError(.authenticationFailed, "cannot read the private key \(path)", url: url, isRetryable: false)
        }
        let encrypted = PrivateKeyFile.isEncrypted(atPath: path)
        var passphrase = passphrase
        var refused = 0
        while true {
            if encrypted, passphrase == nil || refused > 0 {
                guard refused < configuration.maxAuthenticationFailures else {
                    throw TransportError(.authenticationFailed, "the passphrase of \(path) was refused \(refused) times", url: url, isRetryable: false)
                }
                let challenge = AuthChallenge(kind: .sshPublicKey, url: url, realm: path, previousFailureCount: refused + 1)
                switch await sink.challenge(challenge) {
                case .useCredential(let credential) where credential.passphrase != nil:
                    passphrase = credential.passphrase
                case .cancelAuthenticationChallenge:
                    throw cancelled()
                default:
                    return false
                }
            }
            let secret = passphrase ?? ""
            let code = try await session.run(idleTimeout: idleTimeout) { () -> Int32? in
                let code = paperboy_userauth_publickey_fromfile(session.raw, user, path, secret)
                if code == LIBSSH2_ERROR_EAGAIN { return nil }
                if code < 0, TransportError.ssh2BreaksSession(code) {
                    _ = try session.check(code, action: "authenticating with \(path)", url: url)
                }
                return code
            }
            switch code {
            case 0:
                return true
            case LIBSSH2_ERROR_FILE where encrypted:
                // libssh2 cannot tell a wrong passphrase from an unreadable key: ask again, bounded.
                refused += 1
            case LIBSSH2_ERROR_FILE:
                throw TransportError(.authenticationFailed, "libssh2 \(SFTPTransport.libssh2Version) cannot use the private key \(path) (unsupported format?)",
                                     url: url, isRetryable: false)
            default:
                // The server refused this key.
                return false
            }
        }
    }

    private func tryAgent() async throws -> Bool {
        let session = session
        let user = user
        let url = url
        let attempt = AgentAttempt()
        return try await session.run(idleTimeout: idleTimeout) { () -> Bool? in
            try attempt.step(session: session, user: user, url: url)
        }
    }

    // MARK: password

    private func password() async throws -> MethodOutcome {
        var refused = 0
        var fromURL = location.password
        while refused < configuration.maxAuthenticationFailures {
            let secret: String
            if let given = fromURL {
                secret = given
                fromURL = nil
            } else {
                switch await sink.challenge(AuthChallenge(kind: .sshPassword, url: url, previousFailureCount: refused)) {
                case .useCredential(let credential):
                    guard let password = credential.password else { return .skipped("no password given") }
                    secret = password
                case .cancelAuthenticationChallenge:
                    throw cancelled()
                case .rejectProtectionSpace:
                    return .skipped("declined")
                case .performDefaultHandling:
                    return .skipped(refused == 0 ? "no password given" : "refused \(refused) times")
                }
            }
            let session = session
            let user = user
            let url = url
            let code = try await session.run(idleTimeout: idleTimeout) { () -> Int32? in
                let code = paperboy_userauth_password(session.raw, user, secret)
                if code == LIBSSH2_ERROR_EAGAIN { return nil }
                if code < 0, TransportError.ssh2BreaksSession(code) {
                    _ = try session.check(code, action: "authenticating with a password", url: url)
                }
                return code
            }
            if code == 0 { return .accepted }
            if code == LIBSSH2_ERROR_PASSWORD_EXPIRED {
                throw TransportError(.authenticationFailed, "the password of \(user)@\(location.knownHostsName) has expired", url: url, isRetryable: false)
            }
            refused += 1
        }
        throw TransportError(.authenticationFailed, "\(user)@\(location.knownHostsName) refused the password \(refused) times",
                             url: url, isRetryable: false)
    }

    // MARK: keyboard-interactive

    private func keyboardInteractive() async throws -> MethodOutcome {
        let session = session
        let user = user
        let url = url
        let sink = sink
        let state = Mutex((refused: 0, declined: false, cancelled: false, asked: false))
        let limit = configuration.maxAuthenticationFailures
        while state.withLock({ $0.refused }) < limit {
            let code = try await session.run(idleTimeout: idleTimeout) { () -> Int32? in
                // libssh2 asks for answers synchronously, on this session's own thread: waiting
                // for the asynchronous challenge here blocks no cooperative thread, and nothing
                // else runs on a session that is still authenticating.
                session.keyboardInteractive = { prompts in
                    let refused = state.withLock { state in
                        state.asked = true
                        return state.refused
                    }
                    let answer = Mutex<AuthChallengeDisposition>(.performDefaultHandling)
                    let done = DispatchSemaphore(value: 0)
                    Task {
                        let challenge = AuthChallenge(kind: .sshKeyboardInteractive, url: url, previousFailureCount: refused, prompts: prompts)
                        let disposition = await sink.challenge(challenge)
                        answer.withLock { $0 = disposition }
                        done.signal()
                    }
                    done.wait()
                    switch answer.withLock({ $0 }) {
                    case .useCredential(let credential):
                        if !credential.responses.isEmpty { return credential.responses }
                        if prompts.count == 1, let password = credential.password { return [password] }
                        state.withLock { $0.declined = true }
                    case .cancelAuthenticationChallenge:
                        state.withLock { $0.cancelled = true }
                    default:
                        state.withLock { $0.declined = true }
                    }
                    return prompts.map { _ in "" }
                }
                defer { session.keyboardInteractive = nil }
                let code = paperboy_userauth_keyboard_interactive(session.raw, user)
                if code == LIBSSH2_ERROR_EAGAIN { return nil }
                if code < 0, TransportError.ssh2BreaksSession(code) {
                    _ = try session.check(code, action: "authenticating with keyboard-interactive", url: url)
                }
                return code
            }
            if code == 0 { return .accepted }
            let (cancelled, declined, asked) = state.withLock { ($0.cancelled, $0.declined, $0.asked) }
            if cancelled { throw self.cancelled() }
            if declined { return .skipped("no answers given") }
            // Refused before asking anything (an sshd without PAM does so): no answer of ours
            // was refused, and asking again would not change that.
            if !asked { return .skipped("refused without asking anything") }
            state.withLock { $0.refused += 1 }
        }
        throw TransportError(.authenticationFailed, "\(user)@\(location.knownHostsName) refused the keyboard-interactive answers \(limit) times",
                             url: url, isRetryable: false)
    }

    private func cancelled() -> TransportError {
        TransportError(.authenticationFailed, "authentication to \(location.knownHostsName) was cancelled", url: url, isRetryable: false)
    }
}

/// Offers the keys of ssh-agent one by one. Session thread only.
final class AgentAttempt: @unchecked Sendable {
    private var agent: OpaquePointer?
    private var identity: UnsafeMutablePointer<libssh2_agent_publickey>?
    private var needsNext = true

    deinit {
        if let agent {
            libssh2_agent_disconnect(agent)
            libssh2_agent_free(agent)
        }
    }

    /// `true` when a key was accepted, `false` when none was, `nil` when libssh2 would block.
    func step(session: SSHSession, user: String, url: URL) throws -> Bool? {
        if agent == nil {
            guard let made = libssh2_agent_init(session.raw) else { return false }
            agent = made
            guard libssh2_agent_connect(made) == 0, libssh2_agent_list_identities(made) == 0 else { return false }
        }
        guard let agent else { return false }
        while true {
            if needsNext {
                var next: UnsafeMutablePointer<libssh2_agent_publickey>?
                guard libssh2_agent_get_identity(agent, &next, identity) == 0, let next else { return false }
                identity = next
                needsNext = false
            }
            let code = libssh2_agent_userauth(agent, user, identity)
            if code == LIBSSH2_ERROR_EAGAIN { return nil }
            if code == 0 { return true }
            if TransportError.ssh2BreaksSession(code), code != LIBSSH2_ERROR_AGENT_PROTOCOL {
                _ = try session.check(code, action: "authenticating with ssh-agent", url: url)
            }
            needsNext = true
        }
    }
}

/// What can be told about a private key file without decrypting it.
enum PrivateKeyFile {
    /// Whether the key needs a passphrase (OpenSSH format with a cipher, or encrypted PEM).
    static func isEncrypted(atPath path: String) -> Bool {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return false }
        if text.contains("Proc-Type: 4,ENCRYPTED") || text.contains("BEGIN ENCRYPTED PRIVATE KEY") { return true }
        guard let start = text.range(of: "-----BEGIN OPENSSH PRIVATE KEY-----"),
              let end = text.range(of: "-----END OPENSSH PRIVATE KEY-----") else { return false }
        let body = text[start.upperBound..<end.lowerBound].filter { !$0.isWhitespace }
        guard let data = Data(base64Encoded: String(body)) else { return false }
        // "openssh-key-v1\0", then the cipher name as an SSH string: "none" when unencrypted.
        let magic = Array("openssh-key-v1\0".utf8)
        let bytes = [UInt8](data)
        guard bytes.count > magic.count + 4, Array(bytes[0..<magic.count]) == magic else { return false }
        let offset = magic.count
        let length = Int(bytes[offset]) << 24 | Int(bytes[offset + 1]) << 16 | Int(bytes[offset + 2]) << 8 | Int(bytes[offset + 3])
        guard length > 0, offset + 4 + length <= bytes.count else { return false }
        return String(decoding: bytes[(offset + 4)..<(offset + 4 + length)], as: UTF8.self) != "none"
    }
}
