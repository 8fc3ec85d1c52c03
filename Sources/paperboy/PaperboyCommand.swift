import ArgumentParser
import Foundation
import PaperboyDaemon

/// `paperboy`: downloads issues and their assets into a library, as a config file says.
@main
struct PaperboyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "paperboy",
        abstract: "Download issues and their assets into a library, resumably.",
        discussion: """
            Exit codes: 0 done, 1 some assets failed (or a feed could not be read, or a hook \
            failed), 2 usage or configuration error, 75 assets wait for an allowed network \
            (--wait waits instead), 130 interrupted (the next sync resumes).
            """,
        // The one version string: the daemon reports the same in `HELLO`.
        version: DaemonServer.version,
        subcommands: [
            SyncCommand.self, StatusCommand.self, IssuesCommand.self, AddCommand.self, NotifyCommand.self,
            ReadCommand.self, PurgeCommand.self, CheckCommand.self, ConformanceCommand.self, IndexCommand.self,
            DaemonCommand.self,
        ]
    )

    /// Runs the command; usage errors exit with 2, like configuration errors.
    static func main() async {
        do {
            var command = try parseAsRoot()
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch {
            let code = exitCode(for: error)
            if code == .validationFailure {
                Console.error(fullMessage(for: error))
                Foundation.exit(2)
            }
            exit(withError: error)
        }
    }
}
