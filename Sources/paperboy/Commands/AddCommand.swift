import ArgumentParser
import Foundation
import Paperboy
import PaperboyConfig

/// `paperboy add URL --issue NAME`: adds one asset (and its issue if needed) and downloads it.
struct AddCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "add",
        abstract: "Add an asset to an issue (created if needed) and download it.",
        discussion: """
            The asset is delivered to the issue folder at --path (default: the URL's last path \
            component); --unpack zip extracts it there instead. Adding the same URL and path again \
            downloads it again only if it is not delivered. Exits like sync.
            """
    )

    @OptionGroup var options: GlobalOptions

    @Argument(help: "What to download: a URL, or a path (relative to the current folder).")
    var url: String

    @Option(help: "The issue's name (created if it is not in the library).")
    var issue: String

    @Option(help: ArgumentHelp("The issue's date for a new issue, such as 2026-11-21 (default: today).", valueName: "date"))
    var date: String?

    @Option(help: ArgumentHelp("The expected SHA-256, verified before delivery.", valueName: "hex"))
    var sha256: String?

    @Option(help: ArgumentHelp("Where the file goes inside the issue folder.", valueName: "path"))
    var path: String?

    @Option(help: ArgumentHelp("Unpack the file into the issue folder (zip).", valueName: "format"))
    var unpack: AssetEntry.Unpack?

    @Flag(help: "The asset is the issue's cover.")
    var cover = false

    @Flag(help: "Wait for an allowed network instead of exiting with 75.")
    var wait = false

    func validate() throws {
        if let sha256, sha256.count != 64 || !sha256.allSatisfy(\.isHexDigit) {
            throw ValidationError("--sha256 must be 64 hexadecimal digits")
        }
        if let date {
            guard let parsed = Self.parseDate(date) else {
                throw ValidationError("--date: expected a date such as 2026-11-21, got '\(date)'")
            }
            if let problem = LibraryDate.problem(with: parsed) { throw ValidationError("--date '\(date)': \(problem)") }
        }
        // Both become paths in the library: refused here, before a configuration is read.
        if let problem = IssueName.problem(with: issue) { throw ValidationError("--issue \(problem)") }
        let source = try sourceURL()
        if let path {
            if let problem = RelativePath.problem(with: path) { throw ValidationError("--path \(problem)") }
        } else if let problem = RelativePath.problem(with: source.lastPathComponent) {
            throw ValidationError("cannot derive a file name from '\(TerminalText.escape(url))' (its last component \(problem)); give --path")
        }
    }

    func sourceURL() throws -> URL {
        let current = URL(fileURLWithPath: FileManager.default.currentDirectoryPath, isDirectory: true)
        let source: URL
        do {
            source = try TransportRegistry.url(from: url, relativeTo: current)
        } catch {
            throw ValidationError("\(error)")
        }
        // The URL is stored in the library's database: a password must not be.
        guard source.password == nil else {
            throw ValidationError(
                "\(source.redactedString): a password in the URL (user:password@) is refused; "
                    + "put it in a [[credentials]] entry (password_env or password_file) whose match is the URL's origin")
        }
        return source
    }

    static func parseDate(_ text: String) -> Date? { Catalog.date(from: text) }

    func run() async throws {
        options.bootstrapLogging()
        let config = try options.loadConfiguration()
        let source = try sourceURL()
        let destination = path ?? source.lastPathComponent
        let entry = IssueEntry(
            name: issue, date: date.flatMap(Self.parseDate) ?? Self.today(),
            assets: [AssetEntry(url: source, sha256: sha256?.lowercased(), path: destination, unpack: unpack,
                                role: cover ? .cover : .content)])
        let opened = try await DaemonRoute.open(config, options: options, extraURLs: [source])
        PurgedIssues(library: opened.library).forget(issue)
        var run = SyncRun(options: options, config: config, opened: opened)
        run.issues = [entry]
        run.source = "add"
        run.includeFeeds = false
        run.wait = wait
        let code = await run.perform()
        if code != 0 { throw ExitCode(code) }
    }

    static func today() -> Date {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        return calendar.startOfDay(for: Date())
    }
}

extension AssetEntry.Unpack: ExpressibleByArgument {}
