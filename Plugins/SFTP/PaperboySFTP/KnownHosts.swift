#if canImport(Glibc)
import Glibc
#endif
import CPaperboySSH2
import Foundation
import Paperboy

/// The host key a server presented, with what OpenSSH would print about it.
struct HostKey: Sendable {
    /// The key blob as sent by the server.
    var blob: [UInt8]
    /// libssh2's `LIBSSH2_HOSTKEY_TYPE_*`.
    var libssh2Type: Int32
    /// The type named inside the blob, such as `ssh-ed25519` or `ecdsa-sha2-nistp256`.
    var typeName: String
    /// `SHA256:` and the unpadded base64 of the blob's SHA-256, as `ssh-keygen -l` prints it.
    var fingerprint: String

    /// The `LIBSSH2_KNOWNHOST_KEY_*` bits for this key type (they differ from the host-key type
    /// numbers), or nil for a type known_hosts matching cannot handle.
    var knownHostBits: Int32? {
        switch libssh2Type {
        case LIBSSH2_HOSTKEY_TYPE_RSA: PAPERBOY_KNOWNHOST_KEY_SSHRSA
        case LIBSSH2_HOSTKEY_TYPE_DSS: PAPERBOY_KNOWNHOST_KEY_SSHDSS
        case LIBSSH2_HOSTKEY_TYPE_ECDSA_256: PAPERBOY_KNOWNHOST_KEY_ECDSA_256
        case LIBSSH2_HOSTKEY_TYPE_ECDSA_384: PAPERBOY_KNOWNHOST_KEY_ECDSA_384
        case LIBSSH2_HOSTKEY_TYPE_ECDSA_521: PAPERBOY_KNOWNHOST_KEY_ECDSA_521
        case LIBSSH2_HOSTKEY_TYPE_ED25519: PAPERBOY_KNOWNHOST_KEY_ED25519
        default: nil
        }
    }

    /// Reads the host key of a session that finished its handshake.
    init?(session: OpaquePointer) {
        var length = 0
        var type: Int32 = 0
        guard let key = libssh2_session_hostkey(session, &length, &type), length > 0 else { return nil }
        blob = Array(UnsafeRawBufferPointer(start: key, count: length))
        libssh2Type = type
        // The blob starts with the type name as an SSH string (4-byte big-endian length).
        if blob.count >= 4 {
            let nameLength = Int(blob[0]) << 24 | Int(blob[1]) << 16 | Int(blob[2]) << 8 | Int(blob[3])
            typeName = nameLength > 0 && nameLength <= blob.count - 4 ? String(decoding: blob[4..<(4 + nameLength)], as: UTF8.self) : "unknown"
        } else {
            typeName = "unknown"
        }
        if let hash = libssh2_hostkey_hash(session, LIBSSH2_HOSTKEY_HASH_SHA256) {
            let digest = Data(bytes: hash, count: 32).base64EncodedString()
            fingerprint = "SHA256:" + digest.replacingOccurrences(of: "=", with: "")
        } else {
            fingerprint = "SHA256:unavailable"
        }
    }

    /// A known_hosts line for this key.
    func knownHostsLine(for name: String) -> String {
        "\(name) \(typeName) \(Data(blob).base64EncodedString())"
    }
}

/// Checks host keys against an OpenSSH known_hosts file (plain and hashed entries), and records
/// keys the app accepted.
struct KnownHosts: Sendable {
    /// What the file says about a presented key.
    enum Verdict: Sendable, Equatable {
        case match
        /// No key of this type is recorded for the host.
        case unknown
        /// Another key of this type is recorded: possibly a man-in-the-middle.
        case mismatch
    }

    /// The known_hosts file.
    var file: URL

    /// The default: `~/.ssh/known_hosts`.
    static var defaultFile: URL {
        homeFolder.appendingPathComponent(".ssh/known_hosts")
    }

    static var homeFolder: URL {
        if let home = ProcessInfo.processInfo.environment["HOME"], !home.isEmpty { return URL(fileURLWithPath: home) }
        if let entry = getpwuid(geteuid()), let dir = entry.pointee.pw_dir { return URL(fileURLWithPath: String(cString: dir)) }
        return URL(fileURLWithPath: "/")
    }

    /// Compares `key` with what the file records for `host`:`port`. A missing file knows nothing.
    ///
    /// Runs on the session thread (libssh2 objects are per session).
    func check(_ key: HostKey, host: String, port: Int, session: OpaquePointer, url: URL) throws -> Verdict {
        guard let bits = key.knownHostBits else {
            throw TransportError(.untrustedServer, "\(url.redactedString) presented a host key of unsupported type \(key.typeName)",
                                 url: url, isRetryable: false)
        }
        guard FileManager.default.fileExists(atPath: file.path) else { return .unknown }
        guard let hosts = libssh2_knownhost_init(session) else {
            throw TransportError(.ioError, "libssh2 could not allocate a known_hosts list", url: url)
        }
        defer { libssh2_knownhost_free(hosts) }
        // Lines libssh2 cannot parse (certificates, unknown key types) are skipped, not fatal.
        let read = libssh2_knownhost_readfile(hosts, file.path, LIBSSH2_KNOWNHOST_FILE_OPENSSH)
        if read < 0, access(file.path, R_OK) != 0 {
            throw TransportError(.ioError, SystemFailure.message("cannot read known_hosts file", file.path),
                                 url: url, isRetryable: false)
        }
        let typemask = PAPERBOY_KNOWNHOST_TYPE_PLAIN | PAPERBOY_KNOWNHOST_KEYENC_RAW | bits
        let result = key.blob.withUnsafeBufferPointer { buffer in
            buffer.baseAddress!.withMemoryRebound(to: CChar.self, capacity: buffer.count) { pointer in
                libssh2_knownhost_checkp(hosts, host, Int32(port), pointer, buffer.count, typemask, nil)
            }
        }
        switch result {
        case LIBSSH2_KNOWNHOST_CHECK_MATCH: return .match
        case LIBSSH2_KNOWNHOST_CHECK_MISMATCH: return .mismatch
        case LIBSSH2_KNOWNHOST_CHECK_NOTFOUND: return .unknown
        default:
            throw TransportError(.untrustedServer, "cannot check the host key of \(url.redactedString) against \(file.path)",
                                 url: url, isRetryable: false)
        }
    }

    /// Appends a line for `key` (the file and its folder are created private when missing).
    ///
    /// Appending leaves every other line as it was, comments and entries libssh2 cannot read included.
    func record(_ key: HostKey, name: String) throws {
        let folder = file.deletingLastPathComponent()
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let fd = open(file.path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw TransportError(.ioError, SystemFailure.message("cannot record the host key in", file.path), isRetryable: false)
        }
        defer { close(fd) }
        var line = key.knownHostsLine(for: name) + "\n"
        // Start on a fresh line if the file does not end with one.
        var size = stat()
        if fstat(fd, &size) == 0, size.st_size > 0 {
            let reader = open(file.path, O_RDONLY | O_CLOEXEC)
            if reader >= 0 {
                var last: UInt8 = 0
                if pread(reader, &last, 1, size.st_size - 1) == 1, last != UInt8(ascii: "\n") { line = "\n" + line }
                close(reader)
            }
        }
        let written = line.utf8CString.withUnsafeBufferPointer { Glibc.write(fd, $0.baseAddress, $0.count - 1) }
        guard written == line.utf8.count else {
            throw TransportError(.ioError, SystemFailure.message("cannot record the host key in", file.path), isRetryable: false)
        }
    }

    /// The refusal for a changed key, as explicit as OpenSSH's warning.
    static func mismatchError(_ key: HostKey, name: String, file: URL, url: URL) -> TransportError {
        let message = """
            REMOTE HOST IDENTIFICATION HAS CHANGED for \(name)! \
            The \(key.typeName) key it presented, \(key.fingerprint), differs from the one recorded in \(file.path). \
            Someone could be eavesdropping on you right now (man-in-the-middle attack), or the host key has just been changed. \
            Paperboy refuses to connect. If the new key is legitimate, remove the old entry \
            (ssh-keygen -R '\(name)' -f \(file.path)) and connect again.
            """
        return TransportError(.hostKeyMismatch, message, url: url, isRetryable: false)
    }
}
