#if canImport(Glibc)
import Glibc
#endif
import BehaviourLives
import Foundation
import Logging
import Paperboy
import PaperboyClient
import PaperboyDaemon
import PaperboyTestServers
import PaperboyTesting
import PaperboyWire
import Synchronization

/// The library through a paperboy daemon (`Library.connect`).
///
/// ``open(folder:transports:configuration:)`` serves the library from a `DaemonServer` in this
/// process, so that the scenario's transports (the in-memory one included) and its clock are
/// the daemon's. ``relaunch(folder:after:transports:configuration:)`` runs the `paperboy daemon`
/// executable on the library (the file and HTTP transports it ships, its default settings),
/// lives the first life through a client, kills the daemon with SIGKILL at the kill point, and
/// starts it again on the same library; the scenario's transports and configuration do not apply
/// to that daemon.
struct DaemonFactory: BackendFactory {
    var name: String { "through a daemon" }

    /// Without headers and the URL's user or password: a daemon's replies never carry a secret
    /// (docs/Daemon.md, the request object).
    func shown(_ request: AssetRequest) -> AssetRequest { WireAsset.shown(request) }

    func open(folder: URL, transports: TransportRegistry, configuration: Library.Configuration) async throws -> BackendSession {
        var configuration = configuration
        // As `paperboy daemon` opens its library: finished files wait for the client's delegate.
        configuration.deliversFinishedFilesOnOpen = false
        let served = try await offThePool { [configuration] in
            try Library.open(at: folder, transports: transports, configuration: configuration)
        }
        let runtime = Self.runtime(for: folder)
        let server = DaemonServer(library: served, socket: runtime.appendingPathComponent("paperboy/daemon.sock"),
                                  logger: Logger(label: "behaviour.daemon") { _ in SwiftLogNoOpLogHandler() },
                                  clock: configuration.clock, reload: { 0 })
        do {
            try await offThePool { try server.start() }
        } catch {
            await served.close()
            throw error
        }
        let stop: @Sendable () async -> Void = {
            server.stop()
            await served.close()
        }
        let library: Library
        do {
            library = try await Library.connect(socket: runtime.appendingPathComponent("paperboy/daemon.sock"), name: "behaviour suite")
        } catch {
            await stop()
            throw error
        }
        return BackendSession(library: library, close: {
            await library.close()
            await stop()
        }, reopen: { [configuration] in
            try await open(folder: folder, transports: transports, configuration: configuration)
        })
    }

    func relaunch(folder: URL, after life: FirstLife, transports: TransportRegistry,
                  configuration: Library.Configuration) async throws -> BackendSession {
        let config = folder.deletingLastPathComponent().appendingPathComponent("\(folder.lastPathComponent).toml")
        try "[library]\npath = \"\(folder.path)\"\n".write(to: config, atomically: true, encoding: .utf8)
        let runtime = Self.runtime(for: folder)
        let log = folder.deletingLastPathComponent().appendingPathComponent("\(folder.lastPathComponent)-daemon.log")
        let first = try await DaemonProcess(config: config, runtime: runtime, log: log)
        defer { first.process.signal(SIGKILL) }
        let client = try await Library.connect(socket: first.socket, name: "behaviour suite, first life")

        // The life runs in this process; its kill point kills the daemon, then lets it go on.
        let (points, point) = AsyncStream.makeStream(of: Result<Void, any Error>.self)
        let killed = Gate()
        let living = Task {
            do {
                try await life.run(on: client) {
                    point.yield(.success(()))
                    await killed.pass()
                }
            } catch {
                point.yield(.failure(error))
            }
        }
        var iterator = points.makeAsyncIterator()
        let outcome = await iterator.next()
        first.process.signal(SIGKILL)
        await first.process.exited()
        killed.open()
        living.cancel()
        await client.close()
        if case .failure(let error)? = outcome { throw error }

        return try await Self.started(config: config, runtime: runtime, log: log)
    }

    /// Starts `paperboy daemon` on `config` and connects to it; the session's close stops the
    /// daemon, its reopen starts it again.
    static func started(config: URL, runtime: URL, log: URL) async throws -> BackendSession {
        let daemon = try await DaemonProcess(config: config, runtime: runtime, log: log)
        let library: Library
        do {
            library = try await Library.connect(socket: daemon.socket, name: "behaviour suite, relaunched")
        } catch {
            _ = await daemon.stop(SIGKILL)
            throw error
        }
        return BackendSession(library: library, close: {
            await library.close()
            _ = await daemon.stop(SIGTERM)
        }, reopen: {
            try await started(config: config, runtime: runtime, log: log)
        })
    }

    /// A runtime folder like `XDG_RUNTIME_DIR` (mode 0700) next to the library's folder.
    static func runtime(for folder: URL) -> URL {
        let runtime = folder.deletingLastPathComponent().appendingPathComponent("\(folder.lastPathComponent)-run")
        mkdir(runtime.path, 0o700)
        return runtime
    }
}
