#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Logging
import Paperboy
import PaperboyWire
import PaperboyClient
import PaperboyDaemon
import PaperboyFraming
import PaperboyTestServers
import PaperboyTesting
import Synchronization

/// A daemon's server in process for the client to talk to: its library in a temporary folder
/// (the in-memory transport), its socket in a runtime folder like `XDG_RUNTIME_DIR` (mode 0700).
///
/// PaperboyDaemonTests has the same fixture with restarts; the two would share one in
/// PaperboyTestServers, which does not depend on Logging or PaperboyTesting yet.
struct ClientHome: Sendable {
    let folder = TempFolder(prefix: "pbc")
    let transport = InMemoryTransport()

    var runtime: URL { folder.file("run") }
    var socket: URL { runtime.appendingPathComponent("paperboy/daemon.sock") }

    init() {
        mkdir(runtime.path, 0o700)
    }

    /// Starts a server, runs `body`, and stops the server and its library, also when `body` throws.
    func withDaemon<T>(reload: @escaping @Sendable () async throws -> Int = { 0 },
                       _ body: (Library) async throws -> T) async throws -> T {
        // Opening a library writes a database: a thread of its own.
        let library = try await offThePool { [self] in
            var configuration = Library.Configuration.forTests()
            configuration.deliversFinishedFilesOnOpen = false
            return try Library.open(at: folder.file("lib"), transports: TransportRegistry([transport]), configuration: configuration)
        }
        let server = DaemonServer(library: library, socket: socket,
                                  logger: Logger(label: "test.daemon") { _ in SwiftLogNoOpLogHandler() }, reload: reload)
        do {
            try await offThePool { try server.start() }
            let result = try await body(library)
            server.stop()
            await library.close()
            return result
        } catch {
            server.stop()
            await library.close()
            throw error
        }
    }
}

/// Records what an ``AssetDownloadDelegate`` of a library opened through the daemon is told;
/// `didFinishDownloadingTo` reads the file (and the asset's user info, a synchronous read), then
/// throws when `refuses` (the file then stays in the daemon's inbox).
final class InboxReader: AssetDownloadDelegate {
    struct Seen {
        var finished: [(asset: String, path: String, data: Data?)] = []
        var userInfos: [JSONValue?] = []
        var resumedWith: [AssetRequest] = []
        var failures: [LibraryError] = []
        var lastTotal: Int64 = 0
    }

    struct Refused: Error {}

    let seen = Mutex(Seen())
    let refuses: Bool

    init(refuses: Bool = false, refresh: @escaping @Sendable (AssetRequest) -> AssetRequest = { $0 }) {
        self.refuses = refuses
        self.refresh = refresh
    }

    var finished: [(asset: String, path: String, data: Data?)] { seen.withLock { $0.finished } }
    var failures: [LibraryError] { seen.withLock { $0.failures } }
    var userInfos: [JSONValue?] { seen.withLock { $0.userInfos } }
    var resumedWith: [AssetRequest] { seen.withLock { $0.resumedWith } }
    /// What `willResumeWith` returns for the request it is given.
    let refresh: @Sendable (AssetRequest) -> AssetRequest

    func download(_ asset: AssetDownload, didWriteData bytesWritten: Int64, totalBytesWritten: Int64, expectedTotalBytes: Int64?) {
        seen.withLock { $0.lastTotal = totalBytesWritten }
    }

    func download(_ asset: AssetDownload, didFinishDownloadingTo destinationURL: URL) async throws {
        let data = FileManager.default.contents(atPath: destinationURL.path)
        let userInfo = asset.userInfo
        seen.withLock {
            $0.finished.append((asset.identifier, destinationURL.path, data))
            $0.userInfos.append(userInfo)
        }
        if refuses { throw Refused() }
    }

    func download(_ asset: AssetDownload, didFailWithError error: LibraryError) {
        seen.withLock { $0.failures.append(error) }
    }

    func download(_ asset: AssetDownload, willResumeWith request: AssetRequest) async -> AssetRequest {
        seen.withLock { $0.resumedWith.append(request) }
        return refresh(request)
    }
}

/// A delegate that waits at `gate` before it takes a finished file: the client's delivery of
/// events to delegates waits with it.
final class HoldingReader: AssetDownloadDelegate {
    let gate: Gate

    init(gate: Gate) { self.gate = gate }

    func download(_ asset: AssetDownload, didFinishDownloadingTo destinationURL: URL) async throws {
        await gate.pass()
    }
}

/// A client's library-wide events, collected as they come.
final class EventLog: Sendable {
    private final class Record: Sendable {
        let state = Mutex<(events: [LibraryEvent], ended: Bool)>(([], false))
    }

    private let record = Record()

    /// Starts collecting `stream` until it ends.
    init(_ stream: AsyncStream<LibraryEvent>) {
        Task { [record] in
            for await event in stream { record.state.withLock { $0.events.append(event) } }
            record.state.withLock { $0.ended = true }
        }
    }

    var all: [LibraryEvent] { record.state.withLock { $0.events } }

    /// The states seen of `asset`, in order.
    func states(of asset: AssetDownload) -> [AssetState] {
        all.compactMap { if case .assetStateChanged(asset, let state) = $0 { state } else { nil } }
    }
    var hasEnded: Bool { record.state.withLock { $0.ended } }
}

/// A listening socket that is not a daemon: it accepts one connection, reads the client's
/// `HELLO`, then does what `answer` does with the connection (nothing: it never answers).
final class FakeDaemon: Sendable {
    private final class Connection: Sendable {
        let state = Mutex<(fd: Int32, hello: Frame?)>((-1, nil))
    }

    let socket: URL
    private let listener: Int32
    private let connection = Connection()

    init(in folder: URL, answer: @escaping @Sendable (Int32) -> Void = { _ in }) throws {
        mkdir(folder.path, 0o700)
        socket = folder.appendingPathComponent("fake.sock")
        listener = try DaemonSocket.listen(at: socket)
        // Blocks in accept and read: a thread of its own.
        Thread { [listener, connection] in
            let fd = accept(listener, nil, nil)
            guard fd >= 0 else { return }
            connection.state.withLock { $0.fd = fd }
            var reader = FrameReader()
            let hello = try? reader.next(from: fd, maxLength: { _ in 1 << 16 }, wait: { _ in })
            connection.state.withLock { $0.hello = hello }
            answer(fd)
        }.start()
    }

    /// The client's `HELLO`, once read.
    var hello: Frame? { connection.state.withLock { $0.hello } }

    deinit {
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
        let fd = connection.state.withLock { $0.fd }
        if fd >= 0 {
            shutdown(fd, Int32(SHUT_RDWR))
            close(fd)
        }
    }
}
