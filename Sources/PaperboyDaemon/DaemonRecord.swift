#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Paperboy

/// Which daemon has a library open: its process and its socket, in `daemon.json` in the
/// library folder (mode 0600) while it serves, so that a command that finds the library locked
/// can name the daemon and the socket it did not reach.
public struct DaemonRecord: Codable, Sendable, Equatable {
    /// The daemon's process id.
    public var pid: Int32
    /// The socket it listens on.
    public var socket: String

    public init(pid: Int32, socket: String) {
        self.pid = pid
        self.socket = socket
    }

    static func file(in libraryRoot: URL) -> URL { libraryRoot.appendingPathComponent("daemon.json") }

    /// Writes the record (atomically, private to the user).
    func write(in libraryRoot: URL) throws {
        let url = Self.file(in: libraryRoot)
        try JSONEncoder().encode(self).write(to: url, options: .atomic)
        chmod(url.path, 0o600)
    }

    static func remove(from libraryRoot: URL) {
        unlink(file(in: libraryRoot).path)
    }

    /// The record of the daemon serving the library in `libraryRoot`, if one is written and its
    /// process still runs (a record left by a daemon killed with SIGKILL names a dead process).
    public static func running(in libraryRoot: URL) -> DaemonRecord? {
        let url = file(in: libraryRoot)
        let reader = JSONReader("daemon record \(url.path)", limits: .stateFile)
        guard let data = try? reader.contents(of: url),
              let record = try? reader.decode(DaemonRecord.self, from: data),
              record.pid > 0, kill(record.pid, 0) == 0 || errno == EPERM else { return nil }
        return record
    }
}
