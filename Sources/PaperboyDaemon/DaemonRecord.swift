#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Paperboy
import PaperboyWire

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

    static let fileName = "daemon.json"

    /// Writes the record (atomically, private to the user from its first byte), in the library
    /// folder opened as a ``PrivateFolder``.
    func write(in libraryRoot: URL) throws {
        try PrivateFolder.open(libraryRoot).replaceFile(Self.fileName, with: JSONCoding.plain.encoder.encode(self))
    }

    static func remove(from libraryRoot: URL) {
        (try? PrivateFolder.open(libraryRoot))?.remove(fileName)
    }

    /// The record of the daemon serving the library in `libraryRoot`, if one is written and its
    /// process still runs (a record left by a daemon killed with SIGKILL names a dead process).
    /// A record reached through a link, or another user's, is not read.
    public static func running(in libraryRoot: URL) -> DaemonRecord? {
        let reader = JSONReader("daemon record \(libraryRoot.appendingPathComponent(fileName).path)", limits: .stateFile)
        guard let data = try? PrivateFolder.open(libraryRoot).readFile(fileName, atMost: JSONReader.Limits.stateFile.maxBytes),
              let record = try? reader.decode(DaemonRecord.self, from: data),
              record.pid > 0, kill(record.pid, 0) == 0 || errno == EPERM else { return nil }
        return record
    }
}
