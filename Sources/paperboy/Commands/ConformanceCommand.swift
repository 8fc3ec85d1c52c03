import ArgumentParser
import Foundation
import Paperboy
import PaperboyConformance
import PaperboyExec

/// `paperboy conformance`: the transport conformance suite against a helper or a shipped scheme,
/// without writing Swift.
struct ConformanceCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "conformance",
        abstract: "Check a transport (a helper executable, or a scheme paperboy serves) against the transport contract.",
        discussion: """
            The suite writes test files into --served-folder and fetches them from --base-url, \
            where your server serves that folder; it removes them afterwards. Each check prints \
            pass, FAIL (and why) or skip (and what would let it run). Exit codes: 0 every check \
            that ran passed, 1 a check failed, 2 usage error.

            Example, a Python helper serving ftp:// from a local FTP server:
              paperboy conformance --served-folder /srv/ftp/pub --base-url ftp://127.0.0.1:2121/pub/ \\
                --command ./paperboy-transport-ftp --passive
            """
    )

    @OptionGroup var options: GlobalOptions

    @Option(help: ArgumentHelp("A folder the suite may write test files into.", valueName: "folder"))
    var servedFolder: String

    @Option(help: ArgumentHelp("The URL under which your server serves --served-folder.", valueName: "url"))
    var baseURL: String

    @Option(help: ArgumentHelp("A folder served only with the credential below (enables the challenge checks).", valueName: "folder"))
    var protectedFolder: String?

    @Option(help: ArgumentHelp("The URL under which --protected-folder is served.", valueName: "url"))
    var protectedBaseURL: String?

    @Option(help: "The user name the protected folder accepts.")
    var user: String?

    @Option(help: ArgumentHelp("The environment variable holding the protected folder's password (kept from the helper's environment).", valueName: "name"))
    var passwordEnv: String?

    @Option(help: ArgumentHelp("A URL whose connection drops: {url} is a test file's URL, {bytes} where to drop (e.g. '{url}?drop-after={bytes}').", valueName: "template"))
    var droppingURL: String?

    @Option(help: ArgumentHelp("A URL whose source ignores resume requests: {url} is a test file's URL.", valueName: "template"))
    var ignoringRangesURL: String?

    @Flag(help: "The helper of --command fetches one range when asked (its HELLO lists 'ranges'): enables the ranges check.")
    var ranges = false

    @Option(name: .customLong("check"), help: ArgumentHelp("Run only this check (repeatable).", valueName: "name"))
    var checks: [TransportConformance.Check] = []

    @Option(parsing: .remaining, help: ArgumentHelp("The helper and its arguments; everything after --command belongs to it. Without it, the transport paperboy has for the base URL's scheme (shipped, [[transports]] of --config, or paperboy-transport-SCHEME on PATH).", valueName: "executable"))
    var command: [String] = []

    func validate() throws {
        guard let base = URL(string: baseURL), base.scheme != nil else {
            throw ValidationError("--base-url \(baseURL) is not a URL with a scheme")
        }
        try Self.requireWritableFolder(servedFolder, option: "--served-folder")
        let protectedParts = [protectedFolder, protectedBaseURL, user, passwordEnv].filter { $0 != nil }.count
        if protectedParts != 0, protectedParts != 4 {
            throw ValidationError("the challenge checks need all of --protected-folder, --protected-base-url, --user and --password-env")
        }
        if let protectedFolder { try Self.requireWritableFolder(protectedFolder, option: "--protected-folder") }
        if let protectedBaseURL, URL(string: protectedBaseURL)?.scheme == nil {
            throw ValidationError("--protected-base-url \(protectedBaseURL) is not a URL with a scheme")
        }
        if let passwordEnv, ProcessInfo.processInfo.environment[passwordEnv] == nil {
            throw ValidationError("--password-env names \(passwordEnv), which is not set")
        }
    }

    func run() async throws {
        options.bootstrapLogging()
        let base = URL(string: baseURL)!
        let transport = try transport(for: base)
        let fixture = ServedFolderFixture(
            open: .init(folder: URL(fileURLWithPath: servedFolder), baseURL: base),
            protected: protectedFixture(), droppingTemplate: droppingURL, ignoringRangesTemplate: ignoringRangesURL)
        let suite = TransportConformance(transport, fixture: fixture)
        if !options.quiet {
            let what = command.isEmpty ? "the \(base.scheme!) transport" : "helper '\(command[0])'"
            Console.line("paperboy conformance: \(what) against \(base.redactedString)")
        }
        var failed = 0, skipped = 0, passed = 0
        for check in checks.isEmpty ? TransportConformance.Check.allCases : checks {
            switch await suite.evaluate(check) {
            case .passed:
                passed += 1
                if !options.quiet { Console.line("  pass  \(check)") }
            case .failed(let messages):
                failed += 1
                for message in messages { Console.line("  FAIL  \(check): \(message)") }
            case .skipped(let reason):
                skipped += 1
                if !options.quiet { Console.line("  skip  \(check): \(reason)\(Self.hint(for: check))") }
            }
        }
        fixture.removePublished()
        (transport as? ExecTransport)?.retireIdleHelpers()
        Console.line("\(passed) passed, \(failed) failed, \(skipped) skipped")
        if failed > 0 { throw ExitCode(1) }
    }

    /// The helper of `--command`, else what `paperboy sync` would use for the scheme.
    private func transport(for base: URL) throws -> any Transport {
        let scheme = base.scheme!.lowercased()
        let config = options.config == nil ? nil : try options.loadConfiguration()
        // Helpers never see the variables that hold secrets, the password of the checks included.
        var environment = config?.childEnvironment() ?? ProcessInfo.processInfo.environment
        if let passwordEnv { environment[passwordEnv] = nil }
        if !command.isEmpty {
            return ExecTransport(scheme: scheme, command: command, capabilities: ExecTransport.helperCapabilities(ranges: ranges),
                                 environment: environment)
        }
        if let transport = try? Transports.registry(for: config, extraURLs: [base]).transport(for: base) { return transport }
        if let helper = ExecTransport.discover(scheme: scheme, environment: environment) { return helper }
        Console.error("paperboy: no transport for \(scheme): give the helper with --command, or put \(ExecTransport.executableName(for: scheme)) on PATH")
        throw ExitCode(2)
    }

    private func protectedFixture() -> (served: ServedFolderFixture.Served, credential: Credential)? {
        guard let protectedFolder, let protectedBaseURL, let url = URL(string: protectedBaseURL), let user, let passwordEnv,
              let password = ProcessInfo.processInfo.environment[passwordEnv] else { return nil }
        return (.init(folder: URL(fileURLWithPath: protectedFolder), baseURL: url), Credential(user: user, password: password))
    }

    /// Which options would let a skipped check run.
    private static func hint(for check: TransportConformance.Check) -> String {
        switch check {
        case .challenges, .authenticationRefused: " (give --protected-folder, --protected-base-url, --user and --password-env)"
        case .droppedConnection: " (give --dropping-url)"
        case .ignoredRangeRestarts: " (give --ignoring-ranges-url)"
        case .ranges: " (give --ranges for a helper whose HELLO lists 'ranges')"
        default: ""
        }
    }

    private static func requireWritableFolder(_ path: String, option: String) throws {
        var isFolder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isFolder), isFolder.boolValue else {
            throw ValidationError("\(option) \(path) is not a folder")
        }
        guard FileManager.default.isWritableFile(atPath: path) else {
            throw ValidationError("\(option) \(path) is not writable: the suite writes its test files there")
        }
    }
}

extension TransportConformance.Check: ExpressibleByArgument {}
