#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

/// A real OpenSSH sshd on 127.0.0.1, started from a generated configuration in a temporary
/// folder (its own host key, authorized_keys and PID file) and stopped by its PID.
///
/// SFTP is served by `internal-sftp`. Public key authentication accepts the keys made with
/// ``makeClientKey(named:passphrase:)``; password authentication is on (without PAM, so it
/// checks `/etc/shadow`: see ``ensurePasswordUser(name:password:)``).
public final class SSHServer: @unchecked Sendable {
    /// The port sshd listens on.
    public private(set) var port = 0
    /// The folder holding the configuration, keys, log and PID file.
    public let folder: URL
    /// Files placed here can be fetched by absolute path.
    public let root: URL
    /// The host's public key line, such as `ssh-ed25519 AAAA…`.
    public let hostPublicKey: String
    /// sshd's PID (0 once stopped). Spawned directly: sshd closes the descriptors it inherits,
    /// which Foundation's Process takes for an exit, blocking its child monitor in waitpid.
    private var pid: pid_t = 0
    private let authorizedKeys: URL

    /// The sshd binary, if installed.
    public static var binary: String? {
        ["/usr/sbin/sshd", "/usr/local/sbin/sshd"].first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// ssh-keygen, if installed.
    public static var keygen: String? {
        ["/usr/bin/ssh-keygen", "/usr/local/bin/ssh-keygen"].first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// Starts sshd and returns once it says it listens.
    ///
    /// It blocks while keys are made and sshd starts: call it off the cooperative pool
    /// (``offThePool(_:)``).
    ///
    /// - Parameters:
    ///   - binary: the sshd executable (an absolute path: sshd re-executes itself).
    ///   - hostKeyType: `ed25519` or `ecdsa`.
    ///   - port: a port to listen on (a free one when nil), to restart a server with a new key.
    ///   - extraConfiguration: lines put first in sshd_config (for sshd the first value of a
    ///     keyword wins, so they override the defaults below).
    /// - Throws: ``ServerError`` naming the port and quoting sshd's log when sshd exits or does
    ///   not listen within 30 s.
    public init(binary: String, hostKeyType: String = "ed25519", port: Int? = nil, extraConfiguration: String = "") throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("paperboy-sshd-\(UUID().uuidString)")
        root = folder.appendingPathComponent("files")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        // Other users (the password test user) must be able to read the served files.
        chmod(folder.path, 0o755)
        chmod(root.path, 0o755)
        authorizedKeys = folder.appendingPathComponent("authorized_keys")
        _ = FileManager.default.createFile(atPath: authorizedKeys.path, contents: nil, attributes: [.posixPermissions: 0o644])
        let hostKey = folder.appendingPathComponent("host_key")
        try Self.keygen(["-q", "-t", hostKeyType, "-N", "", "-f", hostKey.path])
        hostPublicKey = try String(contentsOf: hostKey.appendingPathExtension("pub"), encoding: .utf8)
            .split(separator: " ").prefix(2).joined(separator: " ")
        // sshd needs its privilege-separation folder.
        try? FileManager.default.createDirectory(atPath: "/run/sshd", withIntermediateDirectories: true)
        // A free port can be taken by another test between the check and sshd's bind: then
        // sshd exits, and another server may answer on that port. Started means sshd itself said
        // it listens; a lost race is tried again on another port.
        for attempt in 1...3 {
            self.port = try port ?? LoopbackWebServer.freePort()

            let configuration = """
                \(extraConfiguration)
                ListenAddress 127.0.0.1
                Port \(self.port)
                HostKey \(hostKey.path)
                PidFile \(folder.appendingPathComponent("sshd.pid").path)
                AuthorizedKeysFile \(authorizedKeys.path)
                UsePAM no
                StrictModes no
                PermitRootLogin yes
                PubkeyAuthentication yes
                PasswordAuthentication yes
                KbdInteractiveAuthentication no
                MaxAuthTries 10
                MaxSessions 20
                Subsystem sftp internal-sftp
                LogLevel VERBOSE

                """
            let configURL = folder.appendingPathComponent("sshd_config")
            try configuration.write(to: configURL, atomically: true, encoding: .utf8)

            let log = folder.appendingPathComponent("sshd.log").path
            var actions = posix_spawn_file_actions_t()
            posix_spawn_file_actions_init(&actions)
            defer { posix_spawn_file_actions_destroy(&actions) }
            posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
            posix_spawn_file_actions_addopen(&actions, 1, log, O_WRONLY | O_CREAT | O_APPEND, 0o644)
            posix_spawn_file_actions_adddup2(&actions, 1, 2)
            let arguments = [binary, "-D", "-e", "-f", configURL.path]
            var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
            defer { for pointer in argv { free(pointer) } }
            var child: pid_t = 0
            let status = posix_spawn(&child, binary, &actions, nil, &argv, environ)
            guard status == 0 else { throw ServerError("cannot start \(binary): \(String(cString: strerror(status)))") }
            pid = child
            ServerReaper.track(child)

            // A guard against a hang only: sshd listens within a second even on a loaded machine.
            let deadline = ContinuousClock.now + .seconds(30)
            while !self.log.contains("Server listening on 127.0.0.1 port \(self.port).") {
                let exited = waitpid(pid, nil, WNOHANG) == pid
                if exited {
                    ServerReaper.untrack(pid)
                    pid = 0
                }
                if exited || ContinuousClock.now > deadline {
                    stop()
                    if port == nil, attempt < 3, self.log.contains("Bind to port \(self.port)") { break }
                    throw ServerError("sshd did not start on port \(self.port) (\(exited ? "it exited" : "not listening after 30 s")); sshd.log: \(self.log)")
                }
                usleep(20_000)   // the caller's own thread (see above)
            }
            if pid != 0 { return }
        }
        throw ServerError("sshd did not start: \(self.log)")
    }

    deinit {
        stop(thenRemove: folder)
    }

    /// `sftp://[user@]127.0.0.1:PORT` followed by the absolute path of `name` under ``root``.
    public func url(_ name: String, user: String? = nil) -> URL {
        let path = root.appendingPathComponent(name).path
        let encoded = path.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) ?? path
        return URL(string: "sftp://\(user.map { "\($0)@" } ?? "")127.0.0.1:\(port)\(encoded)")!
    }

    /// The file behind a served name.
    public func file(_ name: String) -> URL { root.appendingPathComponent(name) }

    /// A known_hosts line for this server: `[127.0.0.1]:PORT ssh-ed25519 AAAA…`.
    public var knownHostsLine: String { "[127.0.0.1]:\(port) \(hostPublicKey)" }

    /// sshd's log so far.
    public var log: String {
        (try? String(contentsOf: folder.appendingPathComponent("sshd.log"), encoding: .utf8)) ?? ""
    }

    /// Makes a client key pair (ed25519, or `type`) whose public key the server accepts.
    ///
    /// - Returns: the private key file.
    @discardableResult
    public func makeClientKey(named name: String, type: String = "ed25519", passphrase: String = "") throws -> URL {
        let key = folder.appendingPathComponent(name)
        try Self.keygen(["-q", "-t", type, "-N", passphrase, "-C", name, "-f", key.path])
        let line = try String(contentsOf: key.appendingPathExtension("pub"), encoding: .utf8)
        let handle = try FileHandle(forWritingTo: authorizedKeys)
        try handle.seekToEnd()
        try handle.write(contentsOf: Data(line.utf8))
        try handle.close()
        return key
    }

    /// Stops sshd by its PID (the listener; sessions it forked end with their connections),
    /// without waiting for it to exit: the caller may be on the cooperative pool.
    public func stop() {
        stop(thenRemove: nil)
    }

    /// Sends SIGTERM, then reaps sshd on a thread of its own and removes `folder`, if any, once
    /// sshd has exited (it writes its log until then).
    private func stop(thenRemove folder: URL?) {
        let child = pid
        pid = 0
        if child > 0 {
            kill(child, SIGTERM)
            ServerReaper.untrack(child)
        }
        guard child > 0 || folder != nil else { return }
        Thread {
            var status: Int32 = 0
            while child > 0, waitpid(child, &status, 0) < 0, errno == EINTR {}
            if let folder { try? FileManager.default.removeItem(at: folder) }
        }.start()
    }

    /// Kills the processes serving open connections (the listener stays): clients see their
    /// connections drop, as when a server crashes or a network path breaks.
    public func dropConnections() {
        guard pid > 0 else { return }
        var parents: Set<pid_t> = [pid]
        var victims: [pid_t] = []
        // Descendants of the listener, found through /proc (each connection has two processes).
        for _ in 0..<3 {
            let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
            for entry in entries {
                guard let child = pid_t(entry), !parents.contains(child),
                      let stat = try? String(contentsOfFile: "/proc/\(entry)/stat", encoding: .utf8),
                      let close = stat.lastIndex(of: ")") else { continue }
                let fields = stat[stat.index(after: close)...].split(separator: " ")
                if fields.count > 1, let parent = pid_t(fields[1]), parents.contains(parent) {
                    parents.insert(child)
                    victims.append(child)
                }
            }
        }
        for victim in victims { kill(victim, SIGKILL) }
    }

    /// Makes sure a local user `name` with password `password` exists, for password
    /// authentication (sshd without PAM checks /etc/shadow). Needs root; returns false otherwise.
    public static func ensurePasswordUser(name: String, password: String) -> Bool {
        guard geteuid() == 0 else { return false }
        if getpwnam(name) == nil {
            guard run("/usr/sbin/useradd", ["--no-create-home", "--shell", "/bin/sh", name]) else { return false }
        }
        return run("/usr/sbin/chpasswd", [], input: "\(name):\(password)\n")
    }

    static func keygen(_ arguments: [String]) throws {
        guard let keygen else { throw ServerError("ssh-keygen is not installed") }
        guard run(keygen, arguments) else { throw ServerError("ssh-keygen \(arguments.joined(separator: " ")) failed") }
    }

    @discardableResult
    static func run(_ tool: String, _ arguments: [String], input: String? = nil) -> Bool {
        (try? ChildProcess.run(tool, arguments, input: input))?.status == 0
    }
}
