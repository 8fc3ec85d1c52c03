import ArgumentParser
import Foundation
import Paperboy
import PaperboyConfig

/// `paperboy purge`: removes the oldest available issues, never the one being read.
struct PurgeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "purge",
        abstract: "Remove the oldest available issues (never the one being read, nor one downloading).",
        discussion: """
            --keep N keeps the newest N issues; --budget SIZE (such as 500MB or 2GiB) then removes more \
            until the issues take at most SIZE. A feed still listing a purged issue does not bring it back.
            """
    )

    @OptionGroup var options: GlobalOptions

    @Option(help: "Keep at most this many issues, newest first.")
    var keep: Int?

    @Option(help: ArgumentHelp("Remove issues until their folders take at most this much (500MB, 2GiB, bytes).", valueName: "size"))
    var budget: String?

    func validate() throws {
        if keep == nil, budget == nil { throw ValidationError("give --keep N, --budget SIZE, or both") }
        if let keep, keep < 0 { throw ValidationError("--keep must be 0 or more") }
        if let budget { _ = try Self.budgetBytes(budget) }
    }

    /// `--budget`: a size as the configuration writes them (``ByteCount/init(size:door:)``), 0 included.
    static func budgetBytes(_ text: String) throws -> Int64 {
        do throws(BoundaryError) {
            return try ByteCount(size: text, door: "--budget").bytes
        } catch {
            throw ValidationError(error.description)
        }
    }

    func run() async throws {
        options.bootstrapLogging()
        let config = try options.loadConfiguration()
        let budgetBytes = try budget.map(Self.budgetBytes)
        let library = try await DaemonRoute.open(config, options: options, resumes: false).library
        var code: Int32 = 0
        do {
            let reading = try await library.currentlyReadingIssue()?.name
            let removed = try await library.purge(keep: keep, budgetBytes: budgetBytes)
            // Read by the feed refresh of whoever syncs the library.
            try? PurgedIssues(library: library).record(removed)
            told(removed, reading: reading)
        } catch {
            Console.error("paperboy: \(error.message)")
            code = 1
        }
        // Purged around them: what cannot be read cannot be judged.
        let damaged = (try? await library.shelf())?.damagedRows ?? []
        DamagedRowReport.tell(damaged)
        if !damaged.isEmpty { code = 1 }
        await library.close()
        if code != 0 { throw ExitCode(code) }
    }

    private func told(_ removed: [String], reading: String?) {
        guard !options.quiet else { return }
        if removed.isEmpty {
            Console.line("paperboy: nothing to purge")
        } else {
            for name in removed { Console.line("removed \(name)") }
            Console.line("paperboy: removed \(removed.count) issue(s)\(reading.map { "; kept \($0) (being read)" } ?? "")")
        }
    }
}
