#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Logging
import Paperboy
import PaperboyDaemon
import PaperboyTestServers
import PaperboyTesting
import Synchronization

/// Where an in-process daemon lives: its library folder and a runtime folder like
/// `XDG_RUNTIME_DIR` (mode 0700, made by the test), in a temporary folder; the in-memory
/// transport its library downloads from.
struct DaemonHome: Sendable {
    let folder = TempFolder(prefix: "pbd")
    let transport = InMemoryTransport()

    var libraryURL: URL { folder.file("lib") }
    var runtime: URL { folder.file("run") }
    /// Where the daemon listens: `paperboy/daemon.sock` in the runtime folder, as `[daemon] socket`'s default.
    var socket: URL { runtime.appendingPathComponent("paperboy/daemon.sock") }

    init() {
        mkdir(runtime.path, 0o700)
    }

    /// Opens the library as `paperboy daemon` does (finished files wait for the server) and
    /// starts a server on ``socket``; on a thread of its own (opening a library writes a database).
    ///
    /// - Parameters:
    ///   - socket: where to listen, if not at ``socket``.
    ///   - reload: what `RELOAD` does.
    ///   - configure: changes to the library's configuration (`forTests()`), such as a clock.
    func start(socket: URL? = nil, reload: @escaping @Sendable () async throws -> Int = { 0 },
               configure: @escaping @Sendable (inout Library.Configuration) -> Void = { _ in }) async throws -> RunningDaemon {
        let library = try await offThePool { [self] in
            var configuration = Library.Configuration.forTests()
            configuration.deliversFinishedFilesOnOpen = false
            configure(&configuration)
            return try Library.open(at: libraryURL, transports: TransportRegistry([transport]), configuration: configuration)
        }
        let server = DaemonServer(
            library: library, socket: socket ?? self.socket, logger: Logger(label: "test.daemon") { _ in SwiftLogNoOpLogHandler() }, reload: reload)
        do {
            try await offThePool { try server.start() }
        } catch {
            server.stop()
            await library.close()
            throw error
        }
        return RunningDaemon(library: library, server: server)
    }

    /// The file's permission bits, or nil when it does not exist.
    func mode(_ url: URL) -> mode_t? {
        var info = stat()
        return stat(url.path, &info) == 0 ? info.st_mode & 0o777 : nil
    }
}

/// A started server and its library.
struct RunningDaemon: Sendable {
    let library: Library
    let server: DaemonServer

    /// Stops as `paperboy daemon` does at SIGTERM: the server, then the library.
    func stop() async {
        server.stop()
        await library.close()
    }
}

extension DaemonHome {
    /// Starts a daemon, runs `body` with it, and stops it, also when `body` throws.
    func withDaemon<T>(reload: @escaping @Sendable () async throws -> Int = { 0 },
                       configure: @escaping @Sendable (inout Library.Configuration) -> Void = { _ in },
                       _ body: (RunningDaemon) async throws -> T) async throws -> T {
        let daemon = try await start(reload: reload, configure: configure)
        do {
            let result = try await body(daemon)
            await daemon.stop()
            return result
        } catch {
            await daemon.stop()
            throw error
        }
    }
}
