import ArgumentParser
import Foundation
import Paperboy
import PaperboyClient
import PaperboyConfig

/// `paperboy issues`: the shelf — each issue with its date, status, new mark and cover.
struct IssuesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "issues",
        abstract: "List the shelf: issues newest first, with date, status, new mark and cover.",
        discussion: "Reads the library without locking it, so it works while a sync runs."
    )

    @OptionGroup var options: GlobalOptions

    @Flag(help: "Print JSON (schema in docs/CLI.md).")
    var json = false

    /// The `issues --json` document.
    struct Shelf: Encodable {
        struct Entry: Encodable {
            var name: String
            var date: String
            var status: String
            var isNew: Bool
            var isReading: Bool
            var contentPath: String
            var coverPath: String?
        }

        var libraryPath: String
        var badgeCount: Int
        var currentlyReading: String?
        /// Rows that cannot be read (absent when there are none).
        var damagedRows: [DamagedRowReport.Entry]?
        var issues: [Entry]
    }

    func run() async throws {
        options.bootstrapLogging()
        let config = try options.loadConfiguration()
        let library = try await DaemonRoute.openForReading(config, options: options)
        defer { library?.disconnect() }
        let read: StatusSource
        do {
            read = try await StatusSource(library: library, libraryPath: config.library.path.path)
        } catch {
            Console.error("paperboy: \(error.message)")
            throw ExitCode(1)
        }
        let damaged = read.damagedRows
        let reading = read.shelf.reading
        var shelf = Shelf(
            libraryPath: read.libraryPath, badgeCount: read.shelf.badge, currentlyReading: reading,
            issues: read.shelf.issues.map { issue in
                Shelf.Entry(name: issue.name, date: issue.date.utcDayText, status: issue.status, isNew: issue.isNew,
                            isReading: issue.name == reading, contentPath: issue.contentPath, coverPath: issue.coverPath)
            })
        if !damaged.isEmpty { shelf.damagedRows = damaged.map(DamagedRowReport.Entry.init) }
        if json {
            Console.json(try JSONCoding.document.encoder.encode(shelf))
            try Self.finish(damaged)
            return
        }
        if shelf.issues.isEmpty {
            Console.line("no issues in \(shelf.libraryPath)")
            try Self.finish(damaged)
            return
        }
        let nameWidth = min(40, shelf.issues.map(\.name.count).max() ?? 0)
        for issue in shelf.issues {
            var marks: [String] = []
            if issue.isNew { marks.append("new") }
            if issue.isReading { marks.append("reading") }
            var line = issue.name.padding(toLength: max(nameWidth, issue.name.count), withPad: " ", startingAt: 0)
            line += "  \(issue.date)  " + issue.status.padding(toLength: 11, withPad: " ", startingAt: 0)
            line += (marks.isEmpty ? "" : " " + marks.joined(separator: ", ")).padding(toLength: 13, withPad: " ", startingAt: 0)
            if let cover = issue.coverPath { line += "  cover \(cover)" }
            Console.line(line.trimmingCharacters(in: .whitespaces))
        }
        Console.line("\(shelf.issues.count) issue(s), \(shelf.badgeCount) new")
        try Self.finish(damaged)
    }

    /// After the listing: the damaged rows, and exit 1 when there are any.
    private static func finish(_ damaged: [DamagedRow]) throws {
        guard !damaged.isEmpty else { return }
        DamagedRowReport.tell(damaged)
        throw ExitCode(1)
    }
}
