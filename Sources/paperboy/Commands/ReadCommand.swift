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
        let library = try SyncRun.openLibrary(config, resumes: false)
        var code: Int32 = 0
        do {
            if let name {
                if let issue = library.issue(named: name) {
                    try library.setCurrentlyReadingIssue(issue)
                    issue.markRead()
                    if !options.quiet { Console.line("paperboy: reading \(name) (\(issue.contentURL.path))") }
                } else {
                    Console.error("paperboy: no issue named '\(name)' in \(library.root.path) (see 'paperboy issues')")
                    code = 1
                }
            } else {
                try library.setCurrentlyReadingIssue(nil)
                if !options.quiet { Console.line("paperboy: no issue is being read") }
            }
        } catch {
            Console.error("paperboy: \(error.message)")
            code = 1
        }
        await library.close()
        if code != 0 { throw ExitCode(code) }
    }
}
