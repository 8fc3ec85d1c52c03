import ArgumentParser
import Foundation
import Logging
import Paperboy
import PaperboyConfig

/// Options every command shares.
struct GlobalOptions: ParsableArguments {
    @Option(name: .shortAndLong, help: "The configuration file (default: ./paperboy.toml, then $XDG_CONFIG_HOME/paperboy/paperboy.toml).")
    var config: String?

    @Flag(name: .shortAndLong, help: "Print only errors.")
    var quiet = false

    @Flag(name: .shortAndLong, help: "Print every asset and retry.")
    var verbose = false

    /// Sets up logging to standard error at the level the flags ask for: errors with `--quiet`,
    /// everything down to each asset with `--verbose`; otherwise warnings, and on a pipe also
    /// notices (feeds read, retries, network waits), which a terminal shows in its live block.
    func bootstrapLogging() {
        let level: Logger.Level = quiet ? .error : (verbose ? .info : (Console.isTerminal ? .warning : .notice))
        LoggingSystem.bootstrap { label in
            var handler = TerminalLogHandler(base: StreamLogHandler.standardError(label: label))
            handler.logLevel = level
            return handler
        }
    }

    /// Finds and reads the configuration; errors exit with code 2 having written nothing.
    func loadConfiguration() throws -> PaperboyConfiguration {
        let current = URL(fileURLWithPath: FileManager.default.currentDirectoryPath, isDirectory: true)
        guard let url = PaperboyConfiguration.defaultConfigURL(explicit: config, currentDirectory: current) else {
            Console.error("paperboy: no configuration file; pass --config FILE or create ./paperboy.toml")
            throw ExitCode(2)
        }
        do {
            return try PaperboyConfiguration.load(contentsOf: url)
        } catch {
            Console.error(error.description)
            throw ExitCode(2)
        }
    }
}

/// Writing to the terminal.
enum Console {
    static let isTerminal = isatty(STDOUT_FILENO) == 1

    /// Writes a line to standard error, control characters escaped (``TerminalText``): messages
    /// quote servers, helpers and catalogs.
    static func error(_ text: String) {
        FileHandle.standardError.write(Data((TerminalText.escape(text, keepingNewlines: true) + "\n").utf8))
    }

    /// Writes a line to standard output, control characters escaped (``TerminalText``).
    static func line(_ text: String) {
        FileHandle.standardOutput.write(Data((TerminalText.escape(text, keepingNewlines: true) + "\n").utf8))
    }

    /// Writes machine-readable output (JSON). The encoder escapes C0 controls itself; DEL, C1
    /// and bidi controls, valid in JSON text, are written as `\u` escapes too (the same value for
    /// a program, inert on a terminal).
    static func json(_ data: Data) {
        FileHandle.standardOutput.write(jsonEscapingControls(data) + Data("\n".utf8))
    }

    static func jsonEscapingControls(_ data: Data) -> Data {
        // Every byte of those characters is 0x7F or above; JSON's structure is ASCII below it.
        guard data.contains(where: { $0 >= 0x7F }) else { return data }
        let text = String(decoding: data, as: UTF8.self)
        guard text.unicodeScalars.contains(where: { $0.value >= 0x7F && TerminalText.needsEscape($0) }) else { return data }
        var escaped = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            if scalar.value >= 0x7F, TerminalText.needsEscape(scalar) {
                escaped.append(contentsOf: String(format: "\\u%04X", scalar.value).unicodeScalars)
            } else {
                escaped.append(scalar)
            }
        }
        return Data(String(escaped).utf8)
    }

    static func bytes(_ count: Int64) -> String {
        let units = ["B", "kB", "MB", "GB", "TB"]
        var value = Double(count)
        var unit = 0
        while value >= 1000, unit < units.count - 1 {
            value /= 1000
            unit += 1
        }
        return unit == 0 ? "\(count) B" : String(format: "%.1f %@", value, units[unit])
    }
}
