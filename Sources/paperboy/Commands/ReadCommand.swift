import ArgumentParser
import Foundation
import Paperboy
import PaperboyConfig

/// `paperboy read NAME`: records the issue the user is reading (it is never purged).
struct ReadCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "read",
        abstract: "Mark an issue as the one being read: it is never purged, and it is no longer new.",
        discussion: "With --none, no issue is being read."
    )

    @OptionGroup var options: GlobalOptions

    @Argument(help: "The issue's name.")
    var name: String?

    @Flag(help: "Clear the currently-reading issue.")
    var none = false

    func validate() throws {
        if none == (name != nil) { throw ValidationError("give an issue name, or --none") }
    }

    func run() async throws {
        options.bootstrapLogging()
        let config = try options.loadConfiguration()
        let library = try await DaemonRoute.open(config, options: options, resumes: false).library
        var code: Int32 = 0
        do {
            if let name {
                if let issue = try await library.issue(named: name) {
                    try await library.setCurrentlyReadingIssue(issue)
                    try await issue.markRead()
                    told(issue.contentURL)
                } else {
                    notFound(in: library.root)
                    code = 1
                }
            } else {
                try await library.setCurrentlyReadingIssue(nil)
                told(nil)
            }
        } catch {
            Console.error("paperboy: \(error.message)")
            code = 1
        }
        await library.close()
        if code != 0 { throw ExitCode(code) }
    }

    private func told(_ content: URL?) {
        guard !options.quiet else { return }
        if let name, let content {
            Console.line("paperboy: reading \(name) (\(content.path))")
        } else {
            Console.line("paperboy: no issue is being read")
        }
    }

    private func notFound(in root: URL) {
        Console.error("paperboy: no issue named '\(name ?? "")' in \(root.path) (see 'paperboy issues')")
    }
}
