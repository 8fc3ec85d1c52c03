#if canImport(Glibc)
import Glibc
#endif
import ArgumentParser
import Foundation
import Paperboy
import PaperboyWire
import PaperboyClient
import PaperboyConfig
import PaperboyDaemon

/// Whether a command goes through the daemon serving its library or opens the library itself.
///
/// The configuration's `[daemon] socket` (resolved as the daemon resolves it) is used when it
/// is this user's socket, not open to others, in a folder nobody else can write, and a daemon
/// of this user answers `HELLO` on it for the same library. No socket, or one nobody listens on
/// (a daemon that died): the command works in-process, as without a daemon. A socket that fails
/// those checks is not trusted: the command says why and exits with 1.
enum DaemonRoute {
    /// The daemon serving `config`'s library, or `nil` to work in-process.
    ///
    /// - Throws: `ExitCode(1)` (having said why) for a socket that is not to be trusted or a
    ///   daemon that refuses the connection.
    static func connect(_ config: PaperboyConfiguration, options: GlobalOptions) async throws -> DaemonBackend? {
        let socket = config.daemon.socket
        switch DaemonSocket.trust(socket) {
        case .absent:
            if options.verbose { Console.error("paperboy: no daemon socket at \(socket.path); working in-process") }
            return nil
        case .refused(let reason):
            Console.error("paperboy: not using the daemon socket \(socket.path): \(reason)")
            throw ExitCode(1)
        case .trusted:
            break
        }
        let probe = (try? DaemonSocket.connect(to: socket)) ?? -1
        guard probe >= 0 else {
            if options.verbose { Console.error("paperboy: no daemon answers on \(socket.path) (a stale socket); working in-process") }
            return nil
        }
        close(probe)
        let client: DaemonBackend
        do {
            client = try await DaemonBackend.connect(socket: socket, name: "paperboy \(CommandLine.arguments.dropFirst().first ?? "")",
                                                     clock: SystemClock())
        } catch {
            Console.error("paperboy: \(error.message)")
            throw ExitCode(1)
        }
        let served = canonical(client.libraryURL)
        let wanted = canonical(config.library.path)
        guard served == wanted else {
            client.disconnect()
            if options.verbose {
                Console.error("paperboy: the daemon on \(socket.path) serves \(served), not \(wanted); working in-process")
            }
            return nil
        }
        if options.verbose { Console.error("paperboy: using the daemon on \(socket.path) (library \(served))") }
        return client
    }

    /// The library of `config` for a command that changes it (`sync`, `add`, `notify`, `read`,
    /// `purge`): the daemon's when one serves it (``connect(_:options:)``), else opened in this
    /// process. The one place such a command decides how its library is opened; from there
    /// the command is the same both ways.
    ///
    /// The configuration's secrets are read whichever process holds the library: one that
    /// cannot be read is a configuration error (said, exit 2) both ways.
    ///
    /// - Parameters:
    ///   - resumes: in process, resume the transfers an earlier run left (`read` and `purge` do not).
    ///   - extraURLs: URLs outside the configuration whose schemes need a transport (`add`).
    /// - Throws: `ExitCode` (having said why) when neither can be opened.
    static func open(_ config: PaperboyConfiguration, options: GlobalOptions, resumes: Bool = true,
                     extraURLs: [URL] = []) async throws -> OpenedLibrary {
        let configuration = try config.libraryConfiguration()
        let transports = Transports.registry(for: config, extraURLs: extraURLs)
        let library: Library
        if let client = try await connect(config, options: options) {
            library = Library(backend: client)
        } else {
            library = try openInProcess(config, configuration: configuration, transports: transports, resumes: resumes)
        }
        return OpenedLibrary(library: library, configuration: configuration, transports: transports)
    }

    /// Opens the library of `config` in this process for writing (also the daemon's own).
    ///
    /// - Throws: `ExitCode(1)` (having said why, with the daemon that holds it, if one does)
    ///   when it cannot be opened.
    static func openInProcess(_ config: PaperboyConfiguration, configuration: Library.Configuration, transports: TransportRegistry,
                              resumes: Bool = true, deliversFinishedFiles: Bool = true) throws -> Library {
        var configuration = configuration
        configuration.resumesOnOpen = resumes
        configuration.deliversFinishedFilesOnOpen = deliversFinishedFiles
        do {
            return try Library.open(at: config.library.path, transports: transports, configuration: configuration)
        } catch {
            Console.error("paperboy: \(error.message)\(lockHint(config))")
            throw ExitCode(1)
        }
    }

    /// The library a command that only reads lists (`issues`, `status`): the daemon's when one
    /// serves it (``connect(_:options:)``), else the library opened for reading, else `nil` (no
    /// library yet). The one place such a command decides how its library is opened.
    ///
    /// - Throws: `ExitCode(1)` (having said why) when neither can be opened.
    static func openForReading(_ config: PaperboyConfiguration, options: GlobalOptions) async throws -> Library? {
        if let client = try await connect(config, options: options) { return Library(backend: client) }
        guard FileManager.default.fileExists(atPath: config.library.path.appendingPathComponent("library.sqlite").path) else { return nil }
        do {
            return try Library.openForReading(at: config.library.path)
        } catch {
            Console.error("paperboy: \(error.message)")
            throw ExitCode(1)
        }
    }

    /// What to add to the error of a library that could not be opened when a daemon holds it:
    /// the daemon's pid and the socket it listens on, which this configuration did not reach.
    static func lockHint(_ config: PaperboyConfiguration) -> String {
        guard let record = DaemonRecord.running(in: config.library.path) else { return "" }
        var hint = "; paperboy daemon (pid \(record.pid)) has it open and listens on \(record.socket)"
        if canonical(URL(fileURLWithPath: record.socket)) != canonical(config.daemon.socket) {
            hint += ", but this configuration's socket is \(config.daemon.socket.path) (set [daemon] socket, or XDG_RUNTIME_DIR as the daemon has it)"
        } else {
            hint += ", which did not answer"
        }
        return hint
    }

    private static func canonical(_ url: URL) -> String {
        url.standardizedFileURL.resolvingSymlinksInPath().path
    }
}

/// A library a command opened (``DaemonRoute/open(_:options:resumes:extraURLs:)``), with the
/// configuration it was opened with and this process's transports: the feeds' catalogs are read
/// with them whichever process holds the library.
struct OpenedLibrary {
    let library: Library
    let configuration: Library.Configuration
    let transports: TransportRegistry

    /// Fetches a feed's catalog (or any small document) through this process's transports,
    /// with the configuration's credentials, retries and timeouts.
    func fetchData(from url: URL, options: [String: String]) async throws(LibraryError) -> Data {
        try await Library.fetchData(from: url, transports: transports, configuration: configuration, options: options)
    }
}
