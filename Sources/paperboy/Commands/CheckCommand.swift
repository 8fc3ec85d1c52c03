import ArgumentParser
import Foundation
import Paperboy
import PaperboyConfig

/// `paperboy check`: reads the configuration as every command does, and says whether it holds.
///
/// `paperboy daemon` runs it in a child process before it reloads a configuration (SIGHUP,
/// `RELOAD`): a file that makes the TOML parser abort (toml++'s assertions, docs/Security.md)
/// then ends the child, not the daemon.
struct CheckCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check",
        abstract: "Read the configuration and say what is wrong with it.",
        discussion: "Exit codes: 0 the configuration is valid, 2 it is not (the error names the file and line)."
    )

    @OptionGroup var options: GlobalOptions

    /// For ``ConfigurationPreflight``: the error goes to standard output, which the daemon reads.
    @Flag(help: .hidden)
    var errorsToStandardOutput = false

    func run() throws {
        if errorsToStandardOutput, let path = options.config {
            do {
                _ = try PaperboyConfiguration.load(contentsOf: URL(fileURLWithPath: path))
            } catch {
                Console.line(error.description)
                throw ExitCode(2)
            }
            return
        }
        let config = try options.loadConfiguration()
        if !options.quiet {
            Console.line("\(config.fileURL.path): valid; \(config.issues.count) issue(s), \(config.feeds.count) feed(s)")
        }
    }
}

/// Reads a configuration in a child process (`paperboy check`) before this process reads it: the
/// TOML parser's assertions abort the process that parses (docs/Security.md), and the daemon must
/// outlive a bad file.
enum ConfigurationPreflight {
    /// How long the child may take: a configuration is read in milliseconds.
    static let timeout: Duration = .seconds(30)

    /// Why `url` cannot be read, or `nil` when a child process read it without error.
    ///
    /// Runs on a thread of its own (the child is waited for), never on the cooperative pool.
    static func problem(with url: URL) async -> String? {
        let executable = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        // The child's standard error (an assertion's text) goes to the daemon's log.
        let child = ChildRun(executable, ["check", "--errors-to-standard-output", "--config", url.path],
                             environment: childEnvironment(ProcessInfo.processInfo.environment),
                             timeout: timeout, outputLimit: 16 << 10, inheritsOutput: true)
        let (ending, output) = await onAThreadOfItsOwn { child.run() }
        let said = String(decoding: output, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        switch ending {
        case .exited(0):
            return nil
        case .exited:
            return said.isEmpty ? "\(url.lastPathComponent): not a valid configuration" : said
        case .signalled(let signal):
            return "\(url.path) stops the TOML parser (signal \(signal)\(signal == SIGABRT ? ", SIGABRT: an assertion of toml++, see docs/Security.md" : ""))"
        case .timedOut:
            return "\(url.path): reading it took more than \(timeout)"
        case .couldNotStart(let why):
            return "cannot check \(url.path) in a child process: \(why)"
        }
    }

    /// The variables the configuration reader resolves paths with keep their values; every other
    /// variable is present but empty, so that a `*_env` secret is found as the daemon finds it
    /// while its value never reaches the child.
    static func childEnvironment(_ environment: [String: String]) -> [String: String] {
        let kept: Set = ["PATH", "HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_RUNTIME_DIR"]
        var child = environment.reduce(into: [String: String]()) { child, variable in
            child[variable.key] = kept.contains(variable.key) ? variable.value : ""
        }
        child["LANG"] = "C.UTF-8"
        child["SWIFT_BACKTRACE"] = "enable=no"
        return child
    }
}
