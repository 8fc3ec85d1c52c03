import ArgumentParser
import Dispatch
import Foundation
import Paperboy
import PaperboyConfig
import Synchronization

/// `paperboy sync`: reads the feeds, adds the configured and new issues, downloads every
/// undelivered asset, delivers it, and runs the hook for each issue that became available.
struct SyncCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sync",
        abstract: "Read the feeds and download every wanted asset that is not delivered yet.",
        discussion: """
            Running it again does no work for what is already delivered; an interrupted sync resumes. \
            A feed that cannot be read is reported (exit 1); the other feeds and issues still sync.
            """
    )

    @OptionGroup var options: GlobalOptions

    @Flag(help: "Wait for an allowed network instead of exiting with 75 when assets wait for one.")
    var wait = false

    func run() async throws {
        options.bootstrapLogging()
        let config = try options.loadConfiguration()
        var run = SyncRun(options: options, config: config, opened: try await DaemonRoute.open(config, options: options))
        run.wait = wait
        let code = await run.perform()
        // Whichever step the handler's close of the library cut short, the exit is the handler's 130.
        await InterruptHandler.exitIfInterrupted()
        if code != 0 { throw ExitCode(code) }
    }
}

/// Ctrl-C (or SIGTERM) during a command: the library is closed and the command exits with 130.
/// In process the transfers stop with their bytes recorded, so the next sync resumes; through a
/// daemon the command detaches and the daemon goes on downloading.
final class InterruptHandler {
    private let source: any DispatchSourceSignal

    init(library: Library) {
        signal(SIGINT, SIG_IGN)
        signal(SIGTERM, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: SIGINT, queue: .global())
        let detaches = library.local == nil
        let handler: @Sendable () -> Void = {
            InterruptHandler.interrupted.store(true, ordering: .relaxed)
            Console.error(detaches ? "\npaperboy: detached; the daemon goes on downloading ('paperboy status' shows how far it is)"
                                   : "\npaperboy: interrupted; stopping (the next sync resumes)")
            Task {
                await library.close()
                Foundation.exit(130)
            }
        }
        source.setEventHandler(handler: handler)
        source.resume()
        self.source = source
        let term = DispatchSource.makeSignalSource(signal: SIGTERM, queue: .global())
        term.setEventHandler(handler: handler)
        term.resume()
        terminate = term
    }

    private let terminate: any DispatchSourceSignal

    /// Set once Ctrl-C or SIGTERM arrived: the handler closes the library and exits.
    static let interrupted = Atomic<Bool>(false)

    /// Waits for the handler's exit with 130, once ``interrupted`` is set: the command's own
    /// path must not end the process first with another status.
    static func waitForExit() async -> Never {
        while true { try? await Task.sleep(for: .seconds(60)) }
    }

    /// ``waitForExit()`` once Ctrl-C or SIGTERM arrived; returns at once otherwise.
    static func exitIfInterrupted() async {
        if interrupted.load(ordering: .relaxed) { await waitForExit() }
    }

    func cancel() {
        source.cancel()
        terminate.cancel()
        signal(SIGINT, SIG_DFL)
        signal(SIGTERM, SIG_DFL)
    }
}

extension Duration {
    var secondsValue: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
