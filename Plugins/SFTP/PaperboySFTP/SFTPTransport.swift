#if canImport(Glibc)
import Glibc
#endif
import CPaperboySSH2
import Foundation
import Paperboy

/// Fetches `sftp:` URLs with libssh2.
///
/// `sftp://[user@]host[:port]/path`: percent-decoded; `/path` is absolute and `/~/path` is
/// relative to the login folder, as with OpenSSH's `sftp`.
///
/// - Sessions: one SSH connection per host, user and known_hosts file, shared by every transfer
///   of this transport value (and its copies); each transfer opens its own SFTP file handle on it.
///   Each connection has a dedicated thread driving non-blocking libssh2 with `poll(2)`, never a
///   cooperative-pool thread, and `TCP_NODELAY` set. An idle connection closes after
///   ``Configuration/sessionIdleLifetime``.
/// - Host keys: checked against a known_hosts file (OpenSSH format, hashed entries included).
///   An unknown key raises a ``AuthChallenge/Kind/serverTrust`` challenge with the key type and
///   its `SHA256:` fingerprint; only an answer of ``Credential/trustServer`` (a credential with
///   `trustsServer`) connects, and the key is then appended to the file
///   (``Configuration/recordsAcceptedHostKeys``). A changed key is refused with `.hostKeyMismatch`.
/// - Authentication: in the order the server offers its methods: `publickey` (the key file of the
///   challenge's answer, with its passphrase asked again when refused; then ssh-agent when
///   `SSH_AUTH_SOCK` is set; then ``Configuration/identityFiles``), `password`,
///   `keyboard-interactive`. After ``Configuration/maxAuthenticationFailures`` refused answers
///   to one method it fails with `.authenticationFailed`.
/// - Resume: the file is opened, its attributes read, and reading starts at the offset. The
///   validator is `size=…;mtime=…` (weak: SFTP version 3 gives whole seconds); when it differs
///   from the recorded one the transfer starts from 0.
/// - Reads: ``Configuration/readSize`` bytes per `libssh2_sftp_read`, which keeps up to four
///   times that (at most 8 MiB) of requests in flight; libssh2 takes at most 64 KiB from the
///   socket per read, so answers wait in the kernel rather than in the heap; a bounded
///   write-behind queue writes to the sink while the next bytes are decrypted; back-pressure
///   from the sink pauses reading.
/// - Large files (``Configuration/splitThreshold``) are read over two connections when the
///   host's connection is otherwise unused: both connections take ranges of the file (large
///   first, smaller near the end) until none are left, each range after the first going into a
///   sink segment.
public struct SFTPTransport: Transport {
    /// Settings for one origin (and path), such as a `[[credentials]]` entry of a configuration file.
    public struct HostRule: Sendable {
        /// The URLs that use the rule (for example `sftp://files.example.com/`): same scheme,
        /// host and port, and a path under the scope's path.
        public var scope: URLScope
        /// The user to log in as when the URL names none.
        public var user: String?
        /// The known_hosts file to check host keys against.
        public var knownHostsFile: URL?

        /// Creates a rule.
        public init(scope: URLScope, user: String? = nil, knownHostsFile: URL? = nil) {
            self.scope = scope
            self.user = user
            self.knownHostsFile = knownHostsFile
        }
    }

    /// Settings applied to every transfer.
    public struct Configuration: Sendable {
        /// The known_hosts file (default `~/.ssh/known_hosts`); the job option `known_hosts` and a
        /// matching ``HostRule`` win over it.
        public var knownHostsFile: URL?
        /// Append host keys the app accepted to the known_hosts file, as OpenSSH does.
        public var recordsAcceptedHostKeys: Bool
        /// Private keys tried when the publickey challenge names no key file (default: the
        /// existing ones of `~/.ssh/id_ed25519` and `~/.ssh/id_ecdsa`).
        public var identityFiles: [URL]
        /// Try the keys of ssh-agent when `SSH_AUTH_SOCK` is set.
        public var usesAgent: Bool
        /// Bytes asked for per read, 64 KiB to 2 MiB (default 1 MiB); also the largest chunk handed
        /// to the sink. libssh2 keeps four times this in requests in flight per file, which bounds
        /// throughput on a long path (4 MiB per round trip).
        ///
        /// Resident memory hardly depends on it: the answers wait in the kernel's socket buffer
        /// (libssh2 takes 64 KiB from the socket per read), and only about the first 330 KiB of
        /// each of the three or four write-behind buffers of this size are ever written to.
        public var readSize: Int
        /// Refused answers tolerated per authentication method before failing.
        public var maxAuthenticationFailures: Int
        /// How long an unused connection stays open for the next transfer.
        public var sessionIdleLifetime: Duration
        /// Files with at least this many bytes left are read over two connections, which take
        /// ranges of the file until none are left (the last ones an eighth of this size), when
        /// no other transfer uses the host's connection and the core's sink accepts segments
        /// (``TransferSink/segment(_:)``); `nil` never splits. libssh2 decrypts on one
        /// core per connection, so one stream cannot match OpenSSH's client.
        public var splitThreshold: Int64?
        /// Per-origin users and known_hosts files; the covering rule with the longest path wins.
        public var hosts: [HostRule]

        /// Creates settings.
        public init(
            knownHostsFile: URL? = nil, recordsAcceptedHostKeys: Bool = true, identityFiles: [URL]? = nil,
            usesAgent: Bool = true, readSize: Int = 1 << 20, maxAuthenticationFailures: Int = 3,
            sessionIdleLifetime: Duration = .seconds(30), hosts: [HostRule] = [], splitThreshold: Int64? = 64 << 20
        ) {
            self.knownHostsFile = knownHostsFile
            self.recordsAcceptedHostKeys = recordsAcceptedHostKeys
            self.identityFiles = identityFiles ?? ["id_ed25519", "id_ecdsa"]
                .map { KnownHosts.homeFolder.appendingPathComponent(".ssh/\($0)") }
                .filter { FileManager.default.fileExists(atPath: $0.path) }
            self.usesAgent = usesAgent
            self.readSize = min(2 << 20, max(64 << 10, readSize))
            self.maxAuthenticationFailures = max(1, maxAuthenticationFailures)
            self.sessionIdleLifetime = sessionIdleLifetime
            self.hosts = hosts
            self.splitThreshold = splitThreshold.map { max(1 << 20, $0) }
        }

        /// The most specific rule whose scope covers `url`.
        func rule(for url: URL) -> HostRule? {
            URLScope.mostSpecific(hosts, for: url, scope: \.scope)
        }
    }

    /// The settings of this transport.
    public var configuration: Configuration
    private let pool = SessionPool()

    /// Creates a transport.
    public init(configuration: Configuration = Configuration()) {
        SFTPTransport.initializeLibrary
        self.configuration = configuration
    }

    /// Creates a transport checking host keys against `knownHostsFile`.
    public init(knownHostsFile: URL?) {
        self.init(configuration: Configuration(knownHostsFile: knownHostsFile))
    }

    public var schemes: Set<String> { ["sftp"] }
    public var capabilities: TransportCapabilities { [.resume, .challenges, .validators, .ranges] }

    /// libssh2's version, such as `1.10.0`.
    public static let libssh2Version = String(cString: paperboy_ssh2_version())

    private static let initializeLibrary: Void = { _ = libssh2_init(0) }()

    public func transfer(_ job: TransferJob, into sink: any TransferSink) async throws {
        let location = try SFTPLocation(job.url)
        let rule = configuration.rule(for: job.url)
        let knownHosts = KnownHosts(file: job.options["known_hosts"].map { URL(fileURLWithPath: ($0 as NSString).expandingTildeInPath) }
            ?? rule?.knownHostsFile ?? configuration.knownHostsFile ?? KnownHosts.defaultFile)
        let user = location.user ?? job.options["user"] ?? rule?.user ?? Self.loginName
        let key = SSHSession.Key(host: location.host, port: location.port, user: user, knownHosts: knownHosts.file.path)
        let configuration = configuration
        let pool = pool
        let setUp: @Sendable (SSHSession) async throws -> Void = { session in
            try await SessionSetup(
                session: session, location: location, user: user, knownHosts: knownHosts,
                configuration: configuration, connectTimeout: job.connectTimeout, idleTimeout: job.idleTimeout, sink: sink
            ).run()
        }
        let split: SFTPDownload.Split? = configuration.splitThreshold.map { threshold in
            let second = SSHSession.Key(host: key.host, port: key.port, user: key.user, knownHosts: key.knownHosts, lane: 1)
            return .init(threshold: threshold) {
                try? await pool.session(for: second, lifetime: configuration.sessionIdleLifetime, setUp: setUp)
            }
        }
        var reconnected = false
        while true {
            let session = try await pool.session(for: key, lifetime: configuration.sessionIdleLifetime, setUp: setUp)
            let download = SFTPDownload(session: session, location: location, job: job, sink: sink,
                                        readSize: configuration.readSize, split: split)
            do {
                try await download.run()
                session.release()
                return
            } catch let error as TransportError where error.code == .connectionLost && !reconnected && !download.hasBegun {
                // A shared connection the server closed while it sat idle: reconnect once,
                // transparently, since nothing reached the sink yet.
                session.release()
                session.shutDown()
                reconnected = true
            } catch {
                session.release()
                throw error
            }
        }
    }

    /// The local user name, the default login as with OpenSSH.
    static var loginName: String {
        if let entry = getpwuid(geteuid()), let name = entry.pointee.pw_name { return String(cString: name) }
        return ProcessInfo.processInfo.environment["USER"] ?? "root"
    }
}

/// Open SSH sessions by host, user and known_hosts file; concurrent transfers to one host wait
/// for a single connection to be set up rather than each opening its own.
actor SessionPool {
    private var ready: [SSHSession.Key: SSHSession] = [:]
    private var opening: [SSHSession.Key: Task<SSHSession, any Error>] = [:]

    /// A session for `key`, taken for the caller (who must ``SSHSession/release()`` it).
    func session(
        for key: SSHSession.Key, lifetime: Duration,
        setUp: @escaping @Sendable (SSHSession) async throws -> Void
    ) async throws -> SSHSession {
        while true {
            if let session = ready[key] {
                if session.acquire() { return session }
                ready[key] = nil
            }
            if let task = opening[key] {
                // Errors of someone else's set-up (a refused host key) are this transfer's too.
                let session = try await task.value
                if session.acquire() { return session }
                continue
            }
            let task = Task<SSHSession, any Error> {
                let session = SSHSession(key: key, idleLifetime: lifetime)
                do {
                    try await setUp(session)
                } catch {
                    session.shutDown()
                    session.release()
                    throw error
                }
                return session
            }
            opening[key] = task
            let result = await withTaskCancellationHandler { await task.result } onCancel: { task.cancel() }
            opening[key] = nil
            let session = try result.get()
            ready[key] = session
            // The set-up's reference is the caller's.
            return session
        }
    }
}
