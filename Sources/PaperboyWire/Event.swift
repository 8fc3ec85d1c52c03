import Foundation
import Paperboy

/// `EVENT`, daemon → subscribed client: one case per event, each with the fields docs/Daemon.md
/// lists for it (`asset` is always an asset's id, `issue` an issue's name).
///
/// On the wire, one object whose `event` names the case (`progress`, `resumed`, `finished`,
/// `failed`, `state`, `issue-available`, `badge`); decoding an unknown name, or a case without
/// a field it always has, fails (a client drops such an event: a later version may add events).
package enum Event: Codable, Sendable, Equatable {
    /// Bytes of a claimed asset arrived; `bytesWritten` counts those since the previous `progress`.
    case progress(asset: String, bytesWritten: Int64, totalBytesWritten: Int64, expectedTotalBytes: Int64?)
    /// A claimed transfer continues from bytes on disk.
    case resumed(asset: String, issue: String?, totalBytesWritten: Int64, expectedTotalBytes: Int64?)
    /// A claimed asset's file waits at `path` for an `ACK` (`issue` empty when the issue is gone).
    case finished(asset: String, issue: String, path: String)
    /// A claimed asset gave up; its claim is dropped.
    case failed(asset: String, issue: String?, error: WireError)
    /// Any asset changed state (`issue`: its issue's name, which a daemon of an earlier
    /// version did not send).
    case state(asset: String, issue: String?, state: WireState)
    /// Every asset of the issue is delivered.
    case issueAvailable(issue: String)
    /// How many issues are new, after `issue-available`.
    case badge(Int)

    /// The event's name on the wire.
    package var name: String {
        switch self {
        case .progress: "progress"
        case .resumed: "resumed"
        case .finished: "finished"
        case .failed: "failed"
        case .state: "state"
        case .issueAvailable: "issue-available"
        case .badge: "badge"
        }
    }

    /// The asset's id, for the events about one asset.
    package var asset: String? {
        switch self {
        case .progress(let asset, _, _, _), .resumed(let asset, _, _, _), .finished(let asset, _, _), .failed(let asset, _, _),
             .state(let asset, _, _):
            asset
        case .issueAvailable, .badge:
            nil
        }
    }

    /// The issue's name, for the events that carry it.
    package var issue: String? {
        switch self {
        case .resumed(_, let issue, _, _), .failed(_, let issue, _), .state(_, let issue, _): issue
        case .finished(_, let issue, _), .issueAvailable(let issue): issue
        default: nil
        }
    }

    /// The names of every event, as the daemon sends them.
    package static let names = ["progress", "resumed", "finished", "failed", "state", "issue-available", "badge"]

    private enum CodingKeys: String, CodingKey {
        case event, asset, issue, bytesWritten, totalBytesWritten, expectedTotalBytes, path, state, error, badge
    }

    package init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let name = try container.decode(String.self, forKey: .event)
        func asset() throws -> String { try container.decode(String.self, forKey: .asset) }
        func bytes(_ key: CodingKeys) throws -> Int64 { try container.decode(Int64.self, forKey: key) }
        func expected() throws -> Int64? { try container.decodeIfPresent(Int64.self, forKey: .expectedTotalBytes) }
        func issue() throws -> String? { try container.decodeIfPresent(String.self, forKey: .issue) }
        switch name {
        case "progress":
            self = .progress(asset: try asset(), bytesWritten: try bytes(.bytesWritten), totalBytesWritten: try bytes(.totalBytesWritten),
                             expectedTotalBytes: try expected())
        case "resumed":
            self = .resumed(asset: try asset(), issue: try issue(), totalBytesWritten: try bytes(.totalBytesWritten),
                            expectedTotalBytes: try expected())
        case "finished":
            self = .finished(asset: try asset(), issue: try issue() ?? "", path: try container.decode(String.self, forKey: .path))
        case "failed":
            self = .failed(asset: try asset(), issue: try issue(), error: try container.decode(WireError.self, forKey: .error))
        case "state":
            self = .state(asset: try asset(), issue: try issue(), state: try container.decode(WireState.self, forKey: .state))
        case "issue-available":
            self = .issueAvailable(issue: try container.decode(String.self, forKey: .issue))
        case "badge":
            self = .badge(try container.decode(Int.self, forKey: .badge))
        default:
            throw DecodingError.dataCorrupted(.init(codingPath: [CodingKeys.event], debugDescription: "unknown event '\(name)'"))
        }
    }

    package func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(name, forKey: .event)
        try container.encodeIfPresent(asset, forKey: .asset)
        try container.encodeIfPresent(issue, forKey: .issue)
        switch self {
        case .progress(_, let bytesWritten, let total, let expected):
            try container.encode(bytesWritten, forKey: .bytesWritten)
            try container.encode(total, forKey: .totalBytesWritten)
            try container.encodeIfPresent(expected, forKey: .expectedTotalBytes)
        case .resumed(_, _, let total, let expected):
            try container.encode(total, forKey: .totalBytesWritten)
            try container.encodeIfPresent(expected, forKey: .expectedTotalBytes)
        case .finished(_, _, let path):
            try container.encode(path, forKey: .path)
        case .failed(_, _, let error):
            try container.encode(error, forKey: .error)
        case .state(_, _, let state):
            try container.encode(state, forKey: .state)
        case .badge(let badge):
            try container.encode(badge, forKey: .badge)
        case .issueAvailable:
            break
        }
    }
}
