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
        var library: Library?
        if FileManager.default.fileExists(atPath: config.library.path.appendingPathComponent("library.sqlite").path) {
            do {
                library = try Library.openForReading(at: config.library.path)
            } catch {
                Console.error("paperboy: \(error.message)")
                throw ExitCode(1)
            }
        }
        let listing = StatusListing(library: library, libraryPath: config.library.path.path)
        let output = BufferedOutput()
        do {
            if json {
                try listing.writeJSON(to: output)
            } else {
                try listing.writeText(to: output)
            }
        } catch let error as LibraryError {
            // What was listed is written; the rest is unknown, and the exit status says so.
            output.flush()
            Console.error("paperboy: \(error.message)")
            throw ExitCode(1)
        }
        output.flush()
    }
}

/// What `paperboy status` lists, written as it is read: issues from the issue table, their
/// status from one aggregate query, their assets a page at a time (100,000 assets once took
/// 2.5 s and 71 MiB when collected into one document first).
struct StatusListing {
    /// One asset, as `status --json` prints it.
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

        init(_ status: AssetListing) {
            id = status.identifier
            url = status.redactedURLString
            state = status.state.name
            bytesWritten = status.totalBytesWritten
            expectedBytes = status.expectedTotalBytes
            path = status.destinationPath
            attempts = status.attempts
            switch status.state {
            case .waiting(let reason):
                self.reason = reason.description
                if case .retry(let until, _) = reason { retryAt = until.utcTimeText }
            case .failed(let message):
                error = message
            default:
                break
            }
        }
    }

    /// One issue's line.
    struct IssueHeader {
        var issue: Issue
        var date: String
        var status: String
        var isNew: Bool
    }

    let library: Library?
    let libraryPath: String

    init(library: Library?, libraryPath: String) {
        self.library = library
        self.libraryPath = library?.root.path ?? libraryPath
    }

    private func issueHeaders() throws(LibraryError) -> [IssueHeader] {
        guard let library else { return [] }
        let counts = try library.assetCountsByIssue()
        return library.issues.map { issue in
            IssueHeader(issue: issue, date: issue.date.utcDayText, status: (counts[issue.name] ?? AssetCounts()).issueStatus.rawValue,
                        isNew: issue.isNew)
        }
    }

    func writeText(to output: BufferedOutput) throws {
        output.line("library \(libraryPath)")
        if let bandwidth = library?.recordedBandwidthStatistics {
            let limit = bandwidth.limit.map { "\(Console.bytes($0))/s" } ?? "unlimited"
            output.line(String(format: "bandwidth: limit %@, achieved %@/s, %@ granted, throttled %.1f s",
                               limit, Console.bytes(Int64(bandwidth.achievedRate)), Console.bytes(bandwidth.bytesGranted),
                               bandwidth.secondsThrottled))
        }
        let headers = try issueHeaders()
        if headers.isEmpty { output.line("  no issues") }
        for header in headers {
            output.line("\(header.issue.name)  \(header.date)  \(header.status)\(header.isNew ? "  new" : "")")
            try header.issue.forEachAssetListing { status in
                let asset = AssetReport(status)
                var size = Console.bytes(asset.bytesWritten)
                if let expected = asset.expectedBytes, expected != asset.bytesWritten { size += " of \(Console.bytes(expected))" }
                var line = "  \(asset.path ?? asset.id)  \(asset.state)  \(size)"
                if let reason = asset.reason { line += "  (\(reason))" }
                if let error = asset.error { line += "  \(error)" }
                output.line(line)
            }
        }
    }

    /// The document of docs/CLI.md, keys sorted and indented as `JSONEncoder`'s
    /// `[.prettyPrinted, .sortedKeys]` writes them, one asset at a time.
    func writeJSON(to output: BufferedOutput) throws {
        var json = JSONTextWriter(output: output)
        json.beginObject()
        if let bandwidth = library?.recordedBandwidthStatistics {
            json.key("bandwidth")
            try json.encoded(bandwidth)
        }
        json.key("issues")
        json.beginArray()
        for header in try issueHeaders() {
            json.beginObject()
            json.key("assets")
            json.beginArray()
            try header.issue.forEachAssetListing { status in
                let asset = AssetReport(status)
                json.beginObject()
                json.field("attempts", asset.attempts)
                json.field("bytesWritten", asset.bytesWritten)
                if let error = asset.error { json.field("error", error) }
                if let expected = asset.expectedBytes { json.field("expectedBytes", expected) }
                json.field("id", asset.id)
                if let path = asset.path { json.field("path", path) }
                if let reason = asset.reason { json.field("reason", reason) }
                if let retryAt = asset.retryAt { json.field("retryAt", retryAt) }
                json.field("state", asset.state)
                json.field("url", asset.url)
                json.endObject()
            }
            json.endArray()
            json.field("contentPath", header.issue.contentURL.path)
            json.field("date", header.date)
            json.field("isNew", header.isNew)
            json.field("name", header.issue.name)
            json.field("status", header.status)
            json.endObject()
        }
        json.endArray()
        json.field("libraryPath", libraryPath)
        json.endObject()
        output.write("\n")
    }
}
