import ArgumentParser
import Foundation
import Paperboy
import PaperboyConfig

/// `paperboy status`: what the library holds and why anything waits.
struct StatusCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Show issues and assets, with the reason each waiting asset waits.",
        discussion: "Reads the library without locking it, so it works while a sync runs."
    )

    @OptionGroup var options: GlobalOptions

    @Flag(help: "Print JSON (schema in docs/CLI.md).")
    var json = false

    func run() async throws {
        options.bootstrapLogging()
        let config = try options.loadConfiguration()
        let report: StatusReport
        if FileManager.default.fileExists(atPath: config.library.path.appendingPathComponent("library.sqlite").path) {
            do {
                let library = try Library.openForReading(at: config.library.path)
                report = StatusReport(library: library)
            } catch {
                Console.error("paperboy: \(error.message)")
                throw ExitCode(1)
            }
        } else {
            report = StatusReport(libraryPath: config.library.path.path, issues: [])
        }
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
            let data = try encoder.encode(report)
            Console.json(data)
        } else {
            report.printText()
        }
    }
}

/// The `status --json` document.
struct StatusReport: Encodable {
    struct IssueReport: Encodable {
        var name: String
        var date: String
        var status: String
        var isNew: Bool
        var contentPath: String
        var assets: [AssetReport]
    }

    struct AssetReport: Encodable {
        var id: String
        var url: String
        var state: String
        var reason: String?
        var retryAt: String?
        var error: String?
        var bytesWritten: Int64
        var expectedBytes: Int64?
        var path: String?
        var attempts: Int
    }

    var libraryPath: String
    var issues: [IssueReport]
    /// The limiter of the process that has the library open (or had it last).
    var bandwidth: BandwidthLimiter.Statistics?

    init(libraryPath: String, issues: [IssueReport]) {
        self.libraryPath = libraryPath
        self.issues = issues
    }

    init(library: Library) {
        libraryPath = library.root.path
        bandwidth = library.recordedBandwidthStatistics
        issues = library.issues.map { issue in
            IssueReport(
                name: issue.name, date: issue.date.utcDayText, status: issue.status.rawValue,
                isNew: issue.isNew, contentPath: issue.contentURL.path,
                assets: issue.assetStatuses.map { status in
                    var report = AssetReport(
                        id: status.identifier, url: status.request.url.redactedString, state: status.state.name,
                        bytesWritten: status.totalBytesWritten, expectedBytes: status.expectedTotalBytes,
                        path: status.request.destinationPath, attempts: status.attempts)
                    switch status.state {
                    case .waiting(let reason):
                        report.reason = reason.description
                        if case .retry(let until, _) = reason { report.retryAt = until.utcTimeText }
                    case .failed(let message):
                        report.error = message
                    default:
                        break
                    }
                    return report
                })
        }
    }

    func printText() {
        Console.line("library \(libraryPath)")
        if let bandwidth {
            let limit = bandwidth.limit.map { "\(Console.bytes($0))/s" } ?? "unlimited"
            Console.line(String(format: "bandwidth: limit %@, achieved %@/s, %@ granted, throttled %.1f s",
                                limit, Console.bytes(Int64(bandwidth.achievedRate)), Console.bytes(bandwidth.bytesGranted),
                                bandwidth.secondsThrottled))
        }
        if issues.isEmpty { Console.line("  no issues") }
        for issue in issues {
            Console.line("\(issue.name)  \(issue.date)  \(issue.status)\(issue.isNew ? "  new" : "")")
            for asset in issue.assets {
                var size = Console.bytes(asset.bytesWritten)
                if let expected = asset.expectedBytes, expected != asset.bytesWritten { size += " of \(Console.bytes(expected))" }
                var line = "  \(asset.path ?? asset.id)  \(asset.state)  \(size)"
                if let reason = asset.reason { line += "  (\(reason))" }
                if let error = asset.error { line += "  \(error)" }
                Console.line(line)
            }
        }
    }
}
