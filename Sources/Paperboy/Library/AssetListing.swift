import Foundation
import GRDB

/// One asset as a listing shows it (`paperboy status`): what it is, where it goes, where it is,
/// read from the columns a listing prints without decoding the whole request. Cheaper than
/// ``AssetStatus`` (about half the time for 100,000 assets); see ``Issue/forEachAssetListing(_:)``.
package struct AssetListing: Sendable, Hashable {
    /// The asset's stable identifier.
    package var identifier: String
    /// The source URL as the library stores it (absolute).
    package var urlString: String
    /// Where the file goes in the issue's folder, if set.
    package var destinationPath: String?
    /// Where the asset is, and why it waits when it waits.
    package var state: AssetState
    /// The progress count, as ``AssetStatus/totalBytesWritten``.
    package var totalBytesWritten: Int64
    /// The total size, once known.
    package var expectedTotalBytes: Int64?
    /// Failed attempts since the asset last made progress (or was asked for again).
    package var attempts: Int
    /// Why a failed asset failed, as a code: the transport's (``TransportError/Code``, such as
    /// `not-found`) when a transport failed, else the library's (``LibraryError/Code``, such as
    /// `insufficient-storage` or `checksum-mismatch`); nil unless ``state`` is failed.
    package var failureCode: String?
    /// The SHA-256 the delivered file must have, when one was given.
    package var sha256: String?
    /// ``AssetStatus/bytesReused``.
    package var bytesReused: Int64
    /// ``AssetStatus/split``.
    package var split: SplitProgress?

    package init(identifier: String, urlString: String, destinationPath: String?, state: AssetState, totalBytesWritten: Int64,
                 expectedTotalBytes: Int64?, attempts: Int, failureCode: String?, sha256: String? = nil, bytesReused: Int64 = 0) {
        self.identifier = identifier
        self.urlString = urlString
        self.destinationPath = destinationPath
        self.state = state
        self.totalBytesWritten = totalBytesWritten
        self.expectedTotalBytes = expectedTotalBytes
        self.attempts = attempts
        self.failureCode = failureCode
        self.sha256 = sha256
        self.bytesReused = bytesReused
    }

    /// ``urlString`` without user and password (the path only, for a file URL), as
    /// `URL.redactedString` gives it; plain URLs are not parsed.
    package var redactedURLString: String { Self.redactedURLString(urlString) }

    /// `text`, a URL as the library stores it, as ``redactedURLString`` shows it.
    package static func redactedURLString(_ text: String) -> String {
        if text.hasPrefix("file:///") {
            // A plain path: no escapes, query, fragment or parameters, no trailing slash.
            let path = text.utf8.dropFirst(7)
            if !path.contains(where: { [UInt8(ascii: "%"), UInt8(ascii: "?"), UInt8(ascii: "#"), UInt8(ascii: ";")].contains($0) }),
               path.last != UInt8(ascii: "/") {
                return String(text.dropFirst(7))
            }
        } else if !text.utf8.contains(UInt8(ascii: "@")), let colon = text.firstIndex(of: ":"),
                  text[..<colon].lowercased() != "file" {
            // No user or password to remove: the text is what `absoluteString` would give.
            return text
        }
        return URL(string: text)?.redactedString ?? URL.redactedText(text)
    }
}

extension AssetListing {
    /// The columns a listing reads, in the order ``init(plainRow:)`` reads them.
    static let columnNames = [
        "id", "seq", "url", "destinationPath", "unpack", "headers", "options", "state", "detail", "retryAt",
        "attempts", "bytesOnDisk", "expectedBytes", "failureCode", "transportCode", "sha256", "bytesReused", "segments",
    ]

    /// Reads a row of ``columnNames`` by position when it is plainly well formed (a URL of
    /// printable ASCII, no unpack format to check, headers and options that read as
    /// ``AssetRecord`` reads them); `nil` when it must be read in full (``AssetRecord/init(row:)``
    /// decides what a damaged row reads as). Options are common (a credential's `ca_file` is one):
    /// reading each such row in full cost 0.09 s of a 0.32 s sync of 1,000 files over TLS.
    init?(plainRow row: Row, now: Date) throws {
        let stored: DatabaseValue = row[2]
        guard case .string(let url) = stored.storage, url != AssetRecord.unreadableURL.absoluteString,
              Self.isPlainURL(url), row.hasNull(atIndex: 4),
              row.hasNull(atIndex: 5) || (try? AssetRecord.strings(row, 5, "headers")) != nil,
              row.hasNull(atIndex: 6) || (try? AssetRecord.strings(row, 6, "options")) != nil,
              let state = (try? row.decode(String.self, atIndex: 7)).flatMap(PersistedState.init(rawValue:))
        else { return nil }
        identifier = try row.decode(String.self, atIndex: 0)
        urlString = url
        destinationPath = try? row.decode(String?.self, atIndex: 3)
        attempts = Int(min(max(0, row.storedInteger(atIndex: 10) ?? 0), AssetRecord.maxStoredAttempts))
        let retryAt = state == .retry ? (try? row.decode(StoredDate?.self, atIndex: 9))??.date : nil
        let detail = state == .failed ? try? row.decode(String?.self, atIndex: 8) : nil
        self.state = Scheduler.publicState(state, retryAt: retryAt, attempts: attempts, detail: detail, now: now)
        totalBytesWritten = AssetRecord.bytesKept(bytesOnDisk: max(0, row.storedInteger(atIndex: 11) ?? 0),
                                                  segments: (try? row.decode(String?.self, atIndex: 17))?.flatMap(RecordedSegments.init(stored:)))
        expectedTotalBytes = row.storedInteger(atIndex: 12).flatMap { $0 >= 0 ? $0 : nil }
        sha256 = try? row.decode(String?.self, atIndex: 15)
        bytesReused = ByteCount(stored: row.storedInteger(atIndex: 16))?.bytes ?? 0
        if state == .failed {
            failureCode = Self.failureCode(library: try? row.decode(String?.self, atIndex: 13),
                                           transport: try? row.decode(String?.self, atIndex: 14))
        }
    }

    /// The code a listing shows for a failure stored with these codes.
    static func failureCode(library: String?, transport: String?) -> String? {
        if library == LibraryError.Code.transport.rawValue, let transport { return transport }
        return library
    }

    /// The code a listing shows for `failure` (``failureCode``).
    package static func failureCode(of failure: LibraryError) -> String {
        failureCode(library: failure.code.rawValue, transport: failure.transportCode?.rawValue) ?? failure.code.rawValue
    }

    init(_ record: AssetRecord, now: Date) {
        identifier = record.id
        urlString = record.request.url.absoluteString
        destinationPath = record.request.destinationPath
        attempts = record.attempts
        state = Scheduler.publicState(PersistedState(rawValue: record.state) ?? .idle, retryAt: record.retryAt,
                                      attempts: record.attempts, detail: record.detail, now: now)
        totalBytesWritten = record.bytesKept
        expectedTotalBytes = record.expectedBytes
        sha256 = record.request.sha256
        bytesReused = record.bytesReused
        if PersistedState(rawValue: record.state) == .failed {
            failureCode = Self.failureCode(library: record.failure?.code, transport: record.failure?.transportCode)
        }
    }

    /// A scheme (a letter, then letters, digits, `+`, `-`, `.`), a colon, and printable ASCII
    /// without spaces: what `URL(string:)` reads back as the same text.
    static func isPlainURL(_ text: String) -> Bool {
        var sawColon = false
        var first = true
        for byte in text.utf8 {
            guard byte > 0x20, byte < 0x7F else { return false }
            if sawColon { continue }
            if byte == UInt8(ascii: ":") {
                if first { return false }
                sawColon = true
            } else if !(byte.isASCIILetter || (!first && (byte.isASCIIDigit || byte == UInt8(ascii: "+")
                        || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".")))) {
                return false
            }
            first = false
        }
        return sawColon
    }
}

private extension UInt8 {
    var isASCIILetter: Bool { (self | 0x20) >= UInt8(ascii: "a") && (self | 0x20) <= UInt8(ascii: "z") }
    var isASCIIDigit: Bool { self >= UInt8(ascii: "0") && self <= UInt8(ascii: "9") }
}

extension Issue {
    /// Calls `body` with a listing of each of the issue's assets, in the order they were added,
    /// a page (1,000 assets) at a time, with the live state of transfers the library runs; as
    /// ``forEachAssetStatus(_:)``, cheaper. Throws ``LibraryError`` when the library cannot be read,
    /// or `.invalidRequest` when it is opened through a daemon.
    package func forEachAssetListing(_ body: (AssetListing) throws -> Void) throws {
        guard let scheduler else { throw LibraryError.inProcessOnly("Issue.forEachAssetListing") }
        try scheduler.store.forEachAssetListing(issueName: name, now: scheduler.clock.now) { listing in
            guard let live = scheduler.snapshot(listing.identifier) else { return try body(listing) }
            var listing = listing
            if live.state.name != "failed" { listing.failureCode = nil }
            listing.state = live.state
            listing.totalBytesWritten = live.written
            listing.expectedTotalBytes = live.expected
            listing.urlString = live.request.url.absoluteString
            listing.destinationPath = live.request.destinationPath
            listing.sha256 = live.request.sha256
            listing.split = live.split
            try body(listing)
        }
    }
}
