import ArgumentParser
import Foundation
import Paperboy
import PaperboyClient
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
        let library = try await DaemonRoute.openForReading(config, options: options)
        defer { library?.disconnect() }
        let source: StatusSource
        do {
            source = try await StatusSource(library: library, libraryPath: config.library.path.path)
        } catch {
            Console.error("paperboy: \(error.message)")
            throw ExitCode(1)
        }
        let damaged = source.damagedRows
        let listing = StatusListing(source: source, damagedRows: damaged)
        let output = BufferedOutput()
        do {
            if json {
                try await listing.writeJSON(to: output)
            } else {
                try await listing.writeText(to: output)
            }
        } catch let error as LibraryError {
            // What was listed is written; the rest is unknown, and the exit status says so.
            output.flush()
            Console.error("paperboy: \(error.message)")
            throw ExitCode(1)
        }
        output.flush()
        if !damaged.isEmpty {
            DamagedRowReport.tell(damaged)
            throw ExitCode(1)
        }
    }
}

/// What `paperboy status` lists, written as it is read: issues from the issue table, their
/// status from one aggregate query, their assets a page at a time (100,000 assets once took
/// 2.5 s and 71 MiB when collected into one document first).
struct StatusListing {
    /// One asset, as `status --json` prints it.
    struct AssetReport {
        var id: String
        /// The source URL as stored, redacted only when printed (``url``: the text format does
        /// not print it, and 100,000 redacted copies cost 8 ms).
        var sourceURL: String
        /// The source URL, without user and password.
        var url: String { AssetListing.redactedURLString(sourceURL) }
        var state: String
        var reason: String?
        var retryAt: String?
        var error: String?
        var bytesWritten: Int64
        var expectedBytes: Int64?
        var path: String?
        var attempts: Int
        /// Bytes copied from files the library held when it last finished (``AssetStatus/bytesReused``).
        var bytesReused: Int64 = 0
        /// Its pieces and sources while it downloads split (``AssetStatus/split``).
        var split: SplitProgress?

        /// An asset as the library lists it (``AssetListing``: only the columns printed); a
        /// failed one's reason is its failure's code (`insufficient-storage`, `not-found`…).
        init(_ listing: AssetListing) {
            self.init(id: listing.identifier, sourceURL: listing.urlString, path: listing.destinationPath, state: listing.state,
                      bytesWritten: listing.totalBytesWritten, expectedBytes: listing.expectedTotalBytes, attempts: listing.attempts)
            bytesReused = listing.bytesReused
            split = listing.split
            if case .failed = listing.state { reason = listing.failureCode }
        }

        init(id: String, sourceURL: String, path: String?, state: AssetState, bytesWritten: Int64, expectedBytes: Int64?, attempts: Int) {
            self.id = id
            self.sourceURL = sourceURL
            self.state = state.name
            self.bytesWritten = bytesWritten
            self.expectedBytes = expectedBytes
            self.path = path
            self.attempts = attempts
            switch state {
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
        var name: String
        var date: String
        var status: String
        var isNew: Bool
        var contentPath: String
    }

    let source: StatusSource
    /// Written in the JSON document (`damagedRows`), told on stderr by the command.
    var damagedRows: [DamagedRow] = []

    func writeText(to output: BufferedOutput) async throws {
        output.line("library \(source.libraryPath)")
        if let bandwidth = source.bandwidth {
            let limit = bandwidth.limit.map { "\(Console.bytes($0))/s" } ?? "unlimited"
            output.line(String(format: "bandwidth: limit %@, achieved %@/s, %@ granted, throttled %.1f s",
                               limit, Console.bytes(Int64(bandwidth.achievedRate)), Console.bytes(bandwidth.bytesGranted),
                               bandwidth.secondsThrottled))
        }
        let headers = source.headers
        if headers.isEmpty { output.line("  no issues") }
        for header in headers {
            output.line("\(header.name)  \(header.date)  \(header.status)\(header.isNew ? "  new" : "")")
            try await source.forEachAsset(of: header.name) { asset in
                var size = Console.bytes(asset.bytesWritten)
                if let expected = asset.expectedBytes, expected != asset.bytesWritten { size += " of \(Console.bytes(expected))" }
                var line = "  \(asset.path ?? asset.id)  \(asset.state)  \(size)"
                if asset.bytesReused > 0 { line += "  reused \(Console.bytes(asset.bytesReused))" }
                if let split = asset.split { line += "  pieces \(split.piecesDone) of \(split.pieces) done" }
                if let reason = asset.reason { line += "  (\(reason))" }
                if let error = asset.error { line += "  \(error)" }
                output.line(line)
                for source in asset.split?.sources ?? [] {
                    let connections = "\(source.connections) connection\(source.connections == 1 ? "" : "s")"
                    output.line("    from \(TerminalText.escape(source.url.absoluteString))  \(Console.bytes(source.bytes))  \(connections)"
                                + (source.isDemoted ? "  dropped" : ""))
                }
            }
        }
    }

    /// The document of docs/CLI.md, keys sorted and indented as `JSONEncoder`'s
    /// `[.prettyPrinted, .sortedKeys]` writes them, one asset at a time.
    func writeJSON(to output: BufferedOutput) async throws {
        var json = JSONTextWriter(output: output)
        json.beginObject()
        if let bandwidth = source.bandwidth {
            json.key("bandwidth")
            try json.encoded(bandwidth)
        }
        if !damagedRows.isEmpty {
            json.key("damagedRows")
            json.beginArray()
            for row in damagedRows {
                json.beginObject()
                json.field("column", row.column)
                json.field("key", row.key)
                json.field("removal", row.removal)
                json.field("table", row.table.rawValue)
                json.field("value", row.value)
                json.endObject()
            }
            json.endArray()
        }
        json.key("issues")
        json.beginArray()
        for header in source.headers {
            json.beginObject()
            json.key("assets")
            json.beginArray()
            try await source.forEachAsset(of: header.name) { asset in
                json.beginObject()
                json.field("attempts", asset.attempts)
                if asset.bytesReused > 0 { json.field("bytesReused", asset.bytesReused) }
                json.field("bytesWritten", asset.bytesWritten)
                if let error = asset.error { json.field("error", error) }
                if let expected = asset.expectedBytes { json.field("expectedBytes", expected) }
                json.field("id", asset.id)
                if let path = asset.path { json.field("path", path) }
                if let reason = asset.reason { json.field("reason", reason) }
                if let retryAt = asset.retryAt { json.field("retryAt", retryAt) }
                if let split = asset.split {
                    json.key("split")
                    json.beginObject()
                    json.field("pieces", split.pieces)
                    json.field("piecesDone", split.piecesDone)
                    json.key("sources")
                    json.beginArray()
                    for source in split.sources {
                        json.beginObject()
                        json.field("bytes", source.bytes)
                        json.field("connections", source.connections)
                        json.field("dropped", source.isDemoted)
                        json.field("url", source.url.absoluteString)
                        json.endObject()
                    }
                    json.endArray()
                    json.endObject()
                }
                json.field("state", asset.state)
                json.field("url", asset.url)
                json.endObject()
            }
            json.endArray()
            json.field("contentPath", header.contentPath)
            json.field("date", header.date)
            json.field("isNew", header.isNew)
            json.field("name", header.name)
            json.field("status", header.status)
            json.endObject()
        }
        json.endArray()
        json.field("libraryPath", source.libraryPath)
        json.endObject()
        output.write("\n")
    }
}
