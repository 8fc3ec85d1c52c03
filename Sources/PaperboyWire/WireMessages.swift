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

    package init(protocol: Int, paperboy: String, library: String) {
        self.protocol = `protocol`
        self.paperboy = paperboy
        self.library = library
    }
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

/// `ADDASSETS`: assets added to one issue in one transaction (1 to
/// ``DaemonProtocol/maxAssetsPerRequest``), started at once with `download`, unclaimed.
package struct AddAssetsRequest: Codable, Sendable {
    package var id: Int64
    package var issue: String
    package var assets: [NewAsset]
    package var download: Bool?

    package init(id: Int64, issue: String, assets: [NewAsset], download: Bool?) {
        self.id = id
        self.issue = issue
        self.assets = assets
        self.download = download
    }
}

extension AddAssetsRequest {
    /// The most bytes the items of one `ADDASSETS` weigh: half a frame, room for the rest.
    package static let maxChunkBytes = DaemonProtocol.maxPayloadLength / 2

    /// `assets` in order, cut into the requests' `assets`: each chunk weighs at most `maxBytes`
    /// (``maxChunkBytes``) as JSON and holds at most `maxCount` (``DaemonProtocol/maxAssetsPerRequest``;
    /// an item weighs 80 bytes or more, so half a frame holds fewer); an item heavier than
    /// `maxBytes` goes alone, for the daemon to refuse if no frame holds it.
    package static func chunks(_ assets: [NewAsset], maxBytes: Int = maxChunkBytes, maxCount: Int = DaemonProtocol.maxAssetsPerRequest)
        -> [ArraySlice<NewAsset>] {
        var chunks: [ArraySlice<NewAsset>] = []
        var start = assets.startIndex
        var bytes = 0
        for index in assets.indices {
            // Encoding a request and a JSON value cannot fail (``DaemonProtocol/frame(_:_:)``).
            let weight = ((try? DaemonProtocol.encoder.encode(assets[index]))?.count ?? 0) + 1
            if index > start, bytes + weight > maxBytes || index - start == maxCount {
                chunks.append(assets[start..<index])
                start = index
                bytes = 0
            }
            bytes += weight
        }
        if start < assets.endIndex { chunks.append(assets[start...]) }
        return chunks
    }
}

/// One asset of `ADDASSETS`: its request and the app's own value, as in `ADDASSET`.
package struct NewAsset: Codable, Sendable {
    package var request: AssetRequest
    package var userInfo: JSONValue?

    package init(request: AssetRequest, userInfo: JSONValue?) {
        self.request = request
        self.userInfo = userInfo
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

/// Where an asset is: an ``AssetState`` (with ``WaitReason`` flattened into `wait`, `until`,
/// `attempt`, `host`) and, for a failed one, the failure.
///
/// On the wire: `name` always; `wait` only for `waiting`; `until` and `attempt` only for
/// `retry`; `host` only for `host-limit`; `message` (always) and `error` (when known) only for
/// `failed`. An unknown name reads as `idle`, an unknown wait as `queued`.
package struct WireState: Codable, Sendable, Equatable {
    /// The state.
    package var state: AssetState
    /// For `failed`, when known: the failure (an error object without `id`).
    package var error: WireError?

    /// The state `state`; for a failed one, `failure` is why.
    package init(_ state: AssetState, failure: LibraryError? = nil) {
        self.state = state
        if case .failed = state { error = failure.map { WireError($0) } }
    }

    /// Why a failed asset failed: the daemon's error, or (from a daemon that did not send it)
    /// one of code `transport` with the message; `nil` unless failed.
    package var failure: LibraryError? {
        guard case .failed(let message) = state else { return nil }
        return error?.libraryError ?? LibraryError(.transport, message)
    }

    private enum CodingKeys: String, CodingKey {
        case name, wait, until, attempt, host, message, error
    }

    package init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        switch try container.decode(String.self, forKey: .name) {
        case "waiting":
            switch try container.decodeIfPresent(String.self, forKey: .wait) {
            case "retry":
                state = .waiting(.retry(until: try container.decodeIfPresent(Date.self, forKey: .until) ?? Date(),
                                        attempt: max(0, try container.decodeIfPresent(Int.self, forKey: .attempt) ?? 0)))
            case "paused": state = .waiting(.pausedByApp)
            case "network": state = .waiting(.network)
            case "host-limit": state = .waiting(.hostLimit(host: try container.decodeIfPresent(String.self, forKey: .host) ?? ""))
            default: state = .waiting(.queued)
            }
        case "downloading": state = .downloading
        case "finished": state = .finished
        case "delivered": state = .delivered
        case "failed":
            state = .failed(try container.decodeIfPresent(String.self, forKey: .message) ?? "")
            error = try container.decodeIfPresent(WireError.self, forKey: .error)
        case "cancelled": state = .cancelled
        default: state = .idle
        }
    }

    package func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(state.name, forKey: .name)
        switch state {
        case .waiting(let reason):
            switch reason {
            case .queued: try container.encode("queued", forKey: .wait)
            case .retry(let until, let attempt):
                try container.encode("retry", forKey: .wait)
                try container.encode(until, forKey: .until)
                try container.encode(attempt, forKey: .attempt)
            case .pausedByApp: try container.encode("paused", forKey: .wait)
            case .network: try container.encode("network", forKey: .wait)
            case .hostLimit(let host):
                try container.encode("host-limit", forKey: .wait)
                try container.encode(host, forKey: .host)
            }
        case .failed(let message):
            try container.encode(message, forKey: .message)
            try container.encodeIfPresent(error, forKey: .error)
        default:
            break
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
    /// Failed attempts since the asset last made progress: always sent.
    package var attempts: Int
    /// ``AssetStatus/bytesReused``: omitted when `0` (a peer that predates it sends none).
    package var bytesReused: Int64?
    /// ``AssetStatus/split``: only while the asset downloads split (a peer that predates it
    /// sends none).
    package var split: SplitProgress?

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
        bytesReused = status.bytesReused > 0 ? status.bytesReused : nil
        split = status.split
    }

    package init(id: String, issue: String, request: AssetRequest?, userInfo: JSONValue?, state: WireState,
                 totalBytesWritten: Int64, expectedTotalBytes: Int64?, attempts: Int) {
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
        shown.mirrors = request.mirrors.map(\.redacted)
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
    /// Only when asked (`STATUS` with `assets` true or absent).
    package var assets: [WireAsset]?

    package init(name: String, date: Date, status: String, isNew: Bool, contentPath: String, assets: [WireAsset]? = nil) {
        self.name = name
        self.date = date
        self.status = status
        self.isNew = isNew
        self.contentPath = contentPath
        self.assets = assets
    }
}

