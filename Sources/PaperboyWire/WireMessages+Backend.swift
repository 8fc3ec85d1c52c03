import Foundation
import Paperboy

// The requests that give a client every operation of the in-process `Library` (docs/Daemon.md,
// "Requests and replies"): removing an issue, marking it read, waiting for an asset or an issue,
// correcting a checksum, and the delegate's `willResumeWith` (`RESUMING` and `RESUMEWITH`).

extension DaemonProtocol.Kind {
    /// Remove an issue, its downloads and its content, as `Library.removeIssue(_:)`.
    public static let remove = "REMOVE"
    /// Clear an issue's new mark, as `Issue.markRead()`.
    public static let markRead = "MARKREAD"
    /// Wait until an asset ends (`Issue.waitUntilFinished()`) or an issue is complete
    /// (`Issue.waitUntilAvailable()`); answered when it does.
    public static let wait = "WAIT"
    /// Change the SHA-256 an asset's file must have, as `AssetDownload.updateExpectedSHA256(_:)`.
    public static let checksum = "CHECKSUM"
    /// Daemon → client: a transfer of an asset the client claimed is about to continue from
    /// partial bytes; the client may refresh its request (the delegate's `willResumeWith`).
    public static let resuming = "RESUMING"
    /// Client → daemon: the answer to a `RESUMING`.
    public static let resumeWith = "RESUMEWITH"
}

extension DaemonProtocol.ErrorCode {
    /// `RESUMEWITH` naming a resumption that is not waiting for this connection's answer.
    public static let unknownResumption = "unknown-resumption"
}

/// `REMOVE`, `MARKREAD`: one issue by name.
package struct IssueCommand: Codable, Sendable {
    package var id: Int64
    package var issue: String

    package init(id: Int64, issue: String) {
        self.id = id
        self.issue = issue
    }
}

/// `WAIT`: one asset, or one issue (`asset` wins).
package struct WaitRequest: Codable, Sendable {
    package var id: Int64
    package var asset: String?
    package var issue: String?

    package init(id: Int64, asset: String? = nil, issue: String? = nil) {
        self.id = id
        self.asset = asset
        self.issue = issue
    }
}

/// How one asset's wait ended: ``AssetOutcome`` on the wire.
///
/// `outcome` always (`delivered`, `failed`, `cancelled`, `closed`); `error` only for `failed`.
/// An unknown outcome reads as `closed` (the wait ended without saying how).
package struct WireOutcome: Codable, Sendable, Equatable {
    /// The asset's id; present in an issue's `missing` list only.
    package var asset: String?
    package var outcome: String
    package var error: WireError?

    package init(_ outcome: AssetOutcome, asset: String? = nil) {
        self.asset = asset
        switch outcome {
        case .delivered: self.outcome = "delivered"
        case .failed(let failure):
            self.outcome = "failed"
            error = WireError(failure)
        case .cancelled: self.outcome = "cancelled"
        case .closed: self.outcome = "closed"
        }
    }

    /// The outcome this describes.
    package var assetOutcome: AssetOutcome {
        switch outcome {
        case "delivered": .delivered
        case "failed": .failed(error?.libraryError ?? LibraryError(.transport, "the daemon reported a failure without its error"))
        case "cancelled": .cancelled
        default: .closed
        }
    }
}

/// `OK` to `WAIT`: for an asset, `outcome` (and `error`); for an issue, `outcome` `available`
/// or `incomplete` with `missing` (each asset not delivered, with how it ended).
package struct WaitReply: Codable, Sendable {
    package var id: Int64
    package var outcome: String
    package var error: WireError?
    package var missing: [WireOutcome]?

    /// The `OK` for an asset's wait.
    package init(id: Int64, asset outcome: AssetOutcome) {
        self.id = id
        let wire = WireOutcome(outcome)
        self.outcome = wire.outcome
        error = wire.error
    }

    /// The `OK` for an issue's wait.
    package init(id: Int64, issue outcome: IssueOutcome) {
        self.id = id
        switch outcome {
        case .available: self.outcome = "available"
        case .incomplete(let missing):
            self.outcome = "incomplete"
            self.missing = missing.map { WireOutcome($0.value, asset: $0.key.identifier) }.sorted { ($0.asset ?? "") < ($1.asset ?? "") }
        }
    }

    /// The asset's outcome this answer carries.
    package var assetOutcome: AssetOutcome { WireOutcome(outcome: outcome, error: error).assetOutcome }
}

extension WireOutcome {
    package init(outcome: String, error: WireError?) {
        asset = nil
        self.outcome = outcome
        self.error = error
    }
}

/// `CHECKSUM`: the asset and its new `sha256` (absent or null: none).
package struct ChecksumRequest: Codable, Sendable {
    package var id: Int64
    package var asset: String
    package var sha256: String?

    package init(id: Int64, asset: String, sha256: String?) {
        self.id = id
        self.asset = asset
        self.sha256 = sha256
    }
}

/// `RESUMING`, daemon → the client that claimed the asset: the request as clients see it
/// (``WireAsset/shown(_:)``: no headers, no user or password).
package struct ResumingMessage: Codable, Sendable {
    /// Names this resumption in the `RESUMEWITH`.
    package var resuming: String
    package var asset: String
    package var issue: String?
    package var request: AssetRequest

    package init(id: String, asset: String, issue: String?, request: AssetRequest) {
        resuming = id
        self.asset = asset
        self.issue = issue
        self.request = WireAsset.shown(request)
    }
}

/// `RESUMEWITH`, client → daemon: the request to resume with.
package struct ResumeWithRequest: Codable, Sendable {
    package var id: Int64
    package var resuming: String
    package var request: AssetRequest

    package init(id: Int64, resuming: String, request: AssetRequest) {
        self.id = id
        self.resuming = resuming
        self.request = request
    }

    /// The request to resume with, given the `original` the daemon has: what the client could
    /// not see is kept (the headers when it sent none; the URL's user and password when it sent
    /// back the URL it was shown).
    package func merged(into original: AssetRequest) -> AssetRequest {
        var merged = request
        if request.headers.isEmpty { merged.headers = original.headers }
        if request.url == original.url.redacted { merged.url = original.url }
        return merged
    }
}
