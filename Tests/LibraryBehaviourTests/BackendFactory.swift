#if canImport(Glibc)
import Glibc
#endif
import BehaviourLives
import Foundation
import Paperboy
import PaperboyTestServers
import PaperboyTesting
import Testing

/// One way of serving a ``Library`` to the behaviour suite: every scenario runs once per factory
/// in ``Backends/all``, through the shared async API only. Adding a backend is adding a factory.
///
/// A factory opens a library in a folder with the scenario's transports and configuration
/// (its clock included), opens it again after a clean close (``BackendSession/reopen()``), and
/// relaunches it after a crash: ``relaunch(folder:after:)`` lives a ``FirstLife`` in a process
/// that it then kills with SIGKILL at the life's kill point, and serves the library again.
protocol BackendFactory: Sendable, CustomTestStringConvertible {
    /// A short name for test names and messages.
    var name: String { get }

    /// Opens (creating it) the library in `folder`.
    func open(folder: URL, transports: TransportRegistry, configuration: Library.Configuration) async throws -> BackendSession

    /// Lives `life` on the library in `folder` in a process of its own (the file and HTTP
    /// transports, default settings), kills that process with SIGKILL at the life's kill point,
    /// and serves the library again with `transports` and `configuration`.
    func relaunch(folder: URL, after life: FirstLife, transports: TransportRegistry,
                  configuration: Library.Configuration) async throws -> BackendSession

    /// `request` as an asset's status tells it back: what may hold a secret is left out where
    /// the backend does not tell secrets.
    func shown(_ request: AssetRequest) -> AssetRequest
}

extension BackendFactory {
    var testDescription: String { name }
}

/// A library a factory serves, with what closes it.
final class BackendSession: Sendable {
    /// The library, as an app holds it.
    let library: Library
    private let closing: @Sendable () async -> Void
    private let reopening: @Sendable () async throws -> BackendSession

    init(library: Library, close: @escaping @Sendable () async -> Void,
         reopen: @escaping @Sendable () async throws -> BackendSession) {
        self.library = library
        closing = close
        reopening = reopen
    }

    /// Closes the library and everything serving it (a daemon stops).
    func close() async { await closing() }

    /// Closes the library cleanly and serves it again from the same folder, as an app quitting
    /// and launched again does.
    func reopen() async throws -> BackendSession {
        await close()
        return try await reopening()
    }
}

/// The backends every scenario runs against.
enum Backends {
    static let all: [any BackendFactory] = [LocalFactory(), DaemonFactory()]
}

/// The library in this process (`Library.open`). Its crashes happen in `BehaviourKillApp`, a
/// process of its own that lives the first life; the library is then opened in this process.
struct LocalFactory: BackendFactory {
    var name: String { "in process" }

    /// The app's own request, whole: the app is the one that gave it.
    func shown(_ request: AssetRequest) -> AssetRequest { request }

    func open(folder: URL, transports: TransportRegistry, configuration: Library.Configuration) async throws -> BackendSession {
        // Opening writes a database: a thread of its own.
        let library = try await offThePool { try Library.open(at: folder, transports: transports, configuration: configuration) }
        return BackendSession(library: library, close: { await library.close() }, reopen: {
            try await open(folder: folder, transports: transports, configuration: configuration)
        })
    }

    func relaunch(folder: URL, after life: FirstLife, transports: TransportRegistry,
                  configuration: Library.Configuration) async throws -> BackendSession {
        let log = folder.deletingLastPathComponent().appendingPathComponent("\(folder.lastPathComponent)-app.log")
        let fd = Glibc.open(log.path, O_WRONLY | O_CREAT | O_APPEND, 0o600)
        defer { Glibc.close(fd) }
        let json = String(decoding: try JSONEncoder().encode(life), as: UTF8.self)
        let (process, reached) = try await ChildProcess.startedUntilKillPoint(
            BuiltExecutable.url(named: "BehaviourKillApp").path, [folder.path, json], killingAtTheByte: true, standardError: fd)
        await process.exited()
        guard reached else {
            throw ServerError("BehaviourKillApp never reached its kill point (\(life)): \((try? String(contentsOf: log, encoding: .utf8)) ?? "")")
        }
        return try await open(folder: folder, transports: transports, configuration: configuration)
    }
}
