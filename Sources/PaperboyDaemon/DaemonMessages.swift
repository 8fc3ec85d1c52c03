import Foundation
import Paperboy

// The payloads of docs/Daemon.md, one struct per message; field names are snake_case on the wire.

/// Client → daemon, first message.
package struct ClientHello: Codable, Sendable {
    package var protocols: [Int]
    package var client: String?

    package init(protocols: [Int], client: String?) {
        self.protocols = protocols
        self.client = client
    }
}

/// Daemon → client, answer to ``ClientHello``.
package struct DaemonHello: Codable, Sendable {
    package var `protocol`: Int
    package var paperboy: String
    package var library: String
}

/// The `id` every request carries, read first so that even a malformed request gets its answer.
package struct RequestID: Codable, Sendable {
    package var id: Int64?
}

/// `ADDISSUE`.
package struct AddIssueRequest: Codable, Sendable {
    package var id: Int64
    package var name: String
    package var date: Date

    package init(id: Int64, name: String, date: Date) {
        self.id = id
        self.name = name
        self.date = date
    }
}

/// `ADDASSET`: the request is ``AssetRequest`` as JSON.
package struct AddAssetRequest: Codable, Sendable {
    package var id: Int64
    package var issue: String
    package var request: AssetRequest
    package var userInfo: JSONValue?
    package var download: Bool?
    package var deliver: Bool?

    package init(id: Int64, issue: String, request: AssetRequest, userInfo: JSONValue?, download: Bool?, deliver: Bool?) {
        self.id = id
        self.issue = issue
        self.request = request
        self.userInfo = userInfo
        self.download = download
        self.deliver = deliver
    }
}

/// `DOWNLOAD`, `PAUSE`, `RESUME`, `CANCEL`, `ACK`: one asset.
package struct AssetCommand: Codable, Sendable {
    package var id: Int64
    package var asset: String
    /// `DOWNLOAD`/`RESUME`: hand the finished file to clients (wait for an `ACK`).
    package var deliver: Bool?

    package init(id: Int64, asset: String, deliver: Bool? = nil) {
        self.id = id
        self.asset = asset
        self.deliver = deliver
    }
}

/// `STATUS`.
package struct StatusRequest: Codable, Sendable {
    package var id: Int64
    package var issue: String?
    package var asset: String?
    package var assets: Bool?

    package init(id: Int64, issue: String? = nil, asset: String? = nil, assets: Bool? = nil) {
        self.id = id
        self.issue = issue
        self.asset = asset
        self.assets = assets
    }
}

/// `SUBSCRIBE`, `RELOAD`: nothing but the id.
package struct PlainRequest: Codable, Sendable {
    package var id: Int64

    package init(id: Int64) {
        self.id = id
    }
}

/// Where an asset is, as in ``AssetState`` (with ``WaitReason`` flattened).
package struct WireState: Codable, Sendable, Equatable {
    /// ``AssetState/name``.
    package var name: String
    /// For `waiting`: `queued`, `retry`, `paused`, `network`, `host-limit`.
    package var wait: String?
    package var until: Date?
    package var attempt: Int?
    package var host: String?
    /// For `failed`: why.
    package var message: String?
    /// For `failed`, when known: the failure (no `id`).
    package var error: WireError?

    /// The state `state`; for a failed one, `failure` is why.
    package init(_ state: AssetState, failure: LibraryError? = nil) {
        name = state.name
        switch state {
        case .waiting(let reason):
            switch reason {
            case .queued: wait = "queued"
            case .retry(let until, let attempt):
                wait = "retry"
                self.until = until
                self.attempt = attempt
            case .pausedByApp: wait = "paused"
            case .network: wait = "network"
            case .hostLimit(let host):
                wait = "host-limit"
                self.host = host
            }
        case .failed(let message):
            self.message = message
            error = failure.map { WireError($0) }
        default: break
        }
    }

    /// Why a failed asset failed: the daemon's error, or (from a daemon that did not send it)
    /// one of code `transport` with the message; `nil` unless failed.
    package var failure: LibraryError? {
        guard name == "failed" else { return nil }
        return error?.libraryError ?? LibraryError(.transport, message ?? "")
    }

    /// The state this describes; an unknown name reads as `idle`.
    package var state: AssetState {
        switch name {
        case "waiting":
            switch wait {
            case "retry": .waiting(.retry(until: until ?? Date(), attempt: max(0, attempt ?? 0)))
            case "paused": .waiting(.pausedByApp)
            case "network": .waiting(.network)
            case "host-limit": .waiting(.hostLimit(host: host ?? ""))
            default: .waiting(.queued)
            }
        case "downloading": .downloading
        case "finished": .finished
        case "delivered": .delivered
        case "failed": .failed(message ?? "")
        case "cancelled": .cancelled
        default: .idle
        }
    }
}

/// One asset in replies and events.
package struct WireAsset: Codable, Sendable {
    package var id: String
    package var issue: String
    package var request: AssetRequest?
    package var userInfo: JSONValue?
    package var state: WireState
    package var totalBytesWritten: Int64
    package var expectedTotalBytes: Int64?
    package var attempts: Int?

    /// An asset of issue `issue` as its snapshot says.
    package init(_ status: AssetStatus, issue: String, userInfo: JSONValue? = nil) {
        id = status.identifier
        self.issue = issue
        request = Self.shown(status.request)
        self.userInfo = userInfo
        state = WireState(status.state, failure: status.failure)
        totalBytesWritten = status.totalBytesWritten
        expectedTotalBytes = status.expectedTotalBytes
        attempts = status.attempts
    }

    package init(id: String, issue: String, request: AssetRequest?, userInfo: JSONValue?, state: WireState,
                 totalBytesWritten: Int64, expectedTotalBytes: Int64?, attempts: Int?) {
        self.id = id
        self.issue = issue
        self.request = request
        self.userInfo = userInfo
        self.state = state
        self.totalBytesWritten = totalBytesWritten
        self.expectedTotalBytes = expectedTotalBytes
        self.attempts = attempts
    }

    /// A request as clients see it: no headers (they may carry a token) and no user or password
    /// in the URL; like `paperboy status`, a reply never carries a secret.
    package static func shown(_ request: AssetRequest) -> AssetRequest {
        var shown = request
        shown.headers = [:]
        shown.url = request.url.redacted
        return shown
    }
}

/// One issue in replies.
package struct WireIssue: Codable, Sendable {
    package var name: String
    package var date: Date
    package var status: String
    package var isNew: Bool
    package var contentPath: String
    package var assets: [WireAsset]?
}

/// `OK`: a request succeeded; the fields present depend on the request.
package struct OKReply: Codable, Sendable {
    package var id: Int64
    package var issue: WireIssue?
    package var asset: WireAsset?
    package var issues: [WireIssue]?
    package var badge: Int?
    /// `RELOAD`: issues the configuration added.
    package var addedIssues: Int?
}

/// `EVENT`, daemon → subscribed client.
package struct EventMessage: Codable, Sendable {
    /// `progress`, `resumed`, `finished`, `failed`, `state`, `issue-available`, `badge`.
    package var event: String
    package var asset: String?
    package var issue: String?
    package var bytesWritten: Int64?
    package var totalBytesWritten: Int64?
    package var expectedTotalBytes: Int64?
    package var path: String?
    package var state: WireState?
    package var error: WireError?
    package var badge: Int?

    package init(event: String, asset: String? = nil, issue: String? = nil) {
        self.event = event
        self.asset = asset
        self.issue = issue
    }
}
