import Foundation
import Paperboy

/// `OK`, daemon → client: the answer to one request, its type decided by the request's kind
/// (``Reply/decode(answering:_:)``). Every answer carries the request's `id`.
package enum Reply: Sendable {
    /// `ADDISSUE`, `MARKREAD`.
    case issue(IssueReply)
    /// `ADDASSET`, `DOWNLOAD`, `RESUME`, `PAUSE`, `CANCEL`, `CHECKSUM`.
    case asset(AssetReply)
    /// `ADDASSETS`.
    case addedAssets(AddAssetsReply)
    /// `STATUS`.
    case status(StatusReply)
    /// `SUBSCRIBE`, `ACK`, `ANSWER`, `REMOVE`, `RESUMEWITH`: only the `id`.
    case empty(EmptyReply)
    /// `RELOAD`.
    case reload(ReloadReply)
    /// `SHELF`.
    case shelf(ShelfReply)
    /// `ASSETS`.
    case assets(AssetsReply)
    /// `STATES`.
    case states(StatesReply)
    /// `READ`.
    case read(ReadReply)
    /// `PURGE`.
    case purge(PurgeReply)
    /// `NOTIFY`.
    case notify(NotifyReply)
    /// `WAIT`.
    case wait(WaitReply)
    /// `COUNTS`.
    case counts(CountsReply)
    /// `ACTIVITY`.
    case activity(ActivityReply)

    /// The type of the `OK` answering a request of `kind`, `nil` for a kind that is not a request.
    package static func type(answering kind: String) -> (any Codable.Type)? {
        typealias Kind = DaemonProtocol.Kind
        switch kind {
        case Kind.addIssue, Kind.markRead: return IssueReply.self
        case Kind.addAsset, Kind.download, Kind.resume, Kind.pause, Kind.cancel, Kind.checksum: return AssetReply.self
        case Kind.addAssets: return AddAssetsReply.self
        case Kind.status: return StatusReply.self
        case Kind.subscribe, Kind.ack, Kind.answer, Kind.remove, Kind.resumeWith: return EmptyReply.self
        case Kind.wait: return WaitReply.self
        case Kind.reload: return ReloadReply.self
        case Kind.shelf: return ShelfReply.self
        case Kind.assets: return AssetsReply.self
        case Kind.states: return StatesReply.self
        case Kind.read: return ReadReply.self
        case Kind.purge: return PurgeReply.self
        case Kind.notify: return NotifyReply.self
        case Kind.counts: return CountsReply.self
        case Kind.activity: return ActivityReply.self
        default: return nil
        }
    }

    /// Decodes the `OK` answering a request of `kind`.
    ///
    /// - Throws: ``WireError`` `bad-request` naming the field, or `unknown-kind` for a kind that
    ///   is not a request.
    package static func decode(answering kind: String, _ frame: CheckedFrame) throws(WireError) -> Reply {
        typealias Kind = DaemonProtocol.Kind
        switch type(answering: kind) {
        case is IssueReply.Type: return .issue(try DaemonProtocol.decode(IssueReply.self, frame))
        case is AssetReply.Type: return .asset(try DaemonProtocol.decode(AssetReply.self, frame))
        case is AddAssetsReply.Type: return .addedAssets(try DaemonProtocol.decode(AddAssetsReply.self, frame))
        case is StatusReply.Type: return .status(try DaemonProtocol.decode(StatusReply.self, frame))
        case is EmptyReply.Type: return .empty(try DaemonProtocol.decode(EmptyReply.self, frame))
        case is ReloadReply.Type: return .reload(try DaemonProtocol.decode(ReloadReply.self, frame))
        case is ShelfReply.Type: return .shelf(try DaemonProtocol.decode(ShelfReply.self, frame))
        case is AssetsReply.Type: return .assets(try DaemonProtocol.decode(AssetsReply.self, frame))
        case is StatesReply.Type: return .states(try DaemonProtocol.decode(StatesReply.self, frame))
        case is ReadReply.Type: return .read(try DaemonProtocol.decode(ReadReply.self, frame))
        case is PurgeReply.Type: return .purge(try DaemonProtocol.decode(PurgeReply.self, frame))
        case is NotifyReply.Type: return .notify(try DaemonProtocol.decode(NotifyReply.self, frame))
        case is WaitReply.Type: return .wait(try DaemonProtocol.decode(WaitReply.self, frame))
        case is CountsReply.Type: return .counts(try DaemonProtocol.decode(CountsReply.self, frame))
        case is ActivityReply.Type: return .activity(try DaemonProtocol.decode(ActivityReply.self, frame))
        default: throw WireError(DaemonProtocol.ErrorCode.unknownKind, "no OK answers \(kind)")
        }
    }

    /// The payload, for encoding.
    package var payload: any Encodable & Sendable {
        switch self {
        case .issue(let reply): reply
        case .asset(let reply): reply
        case .addedAssets(let reply): reply
        case .status(let reply): reply
        case .empty(let reply): reply
        case .reload(let reply): reply
        case .shelf(let reply): reply
        case .assets(let reply): reply
        case .states(let reply): reply
        case .read(let reply): reply
        case .purge(let reply): reply
        case .notify(let reply): reply
        case .wait(let reply): reply
        case .counts(let reply): reply
        case .activity(let reply): reply
        }
    }

    /// The `OK` frame.
    package var frame: Data { DaemonProtocol.frame(DaemonProtocol.Kind.ok, payload) }
}

/// `OK` to `SUBSCRIBE`, `ACK`, `ANSWER`, `REMOVE` and `RESUMEWITH`; also how a client reads the `id` of any answer.
package struct EmptyReply: Codable, Sendable {
    package var id: Int64

    package init(id: Int64) {
        self.id = id
    }
}

/// `OK` to `ADDISSUE` and `MARKREAD`: the issue, without `assets`.
package struct IssueReply: Codable, Sendable {
    package var id: Int64
    package var issue: WireIssue

    package init(id: Int64, issue: WireIssue) {
        self.id = id
        self.issue = issue
    }
}

/// `OK` to `ADDASSET` (with `user_info` when it has one), `DOWNLOAD`, `RESUME`, `PAUSE`, `CANCEL`, `CHECKSUM`.
package struct AssetReply: Codable, Sendable {
    package var id: Int64
    package var asset: WireAsset

    package init(id: Int64, asset: WireAsset) {
        self.id = id
        self.asset = asset
    }
}

/// `OK` to `ADDASSETS`: the new assets' identifiers, in the order of the request's `assets`
/// (at most ``DaemonProtocol/maxAssetsPerRequest``, so that it fits a frame).
package struct AddAssetsReply: Codable, Sendable {
    package var id: Int64
    package var assets: [String]

    package init(id: Int64, assets: [String]) {
        self.id = id
        self.assets = assets
    }
}

/// `OK` to `STATUS`: what was asked (one asset, one issue, or every issue) and the badge.
package struct StatusReply: Codable, Sendable {
    /// What a `STATUS` asked for.
    package enum Subject: Sendable {
        /// `asset`: one asset, with `user_info` when it has one.
        case asset(WireAsset)
        /// `issue`: one issue.
        case issue(WireIssue)
        /// Neither: every issue, newest first.
        case issues([WireIssue])
    }

    package var id: Int64
    package var subject: Subject
    /// How many issues are new.
    package var badge: Int

    package init(id: Int64, subject: Subject, badge: Int) {
        self.id = id
        self.subject = subject
        self.badge = badge
    }

    private enum CodingKeys: String, CodingKey {
        case id, asset, issue, issues, badge
    }

    package init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(Int64.self, forKey: .id)
        badge = try container.decode(Int.self, forKey: .badge)
        if let asset = try container.decodeIfPresent(WireAsset.self, forKey: .asset) {
            subject = .asset(asset)
        } else if let issue = try container.decodeIfPresent(WireIssue.self, forKey: .issue) {
            subject = .issue(issue)
        } else {
            subject = .issues(try container.decode([WireIssue].self, forKey: .issues))
        }
    }

    package func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(badge, forKey: .badge)
        switch subject {
        case .asset(let asset): try container.encode(asset, forKey: .asset)
        case .issue(let issue): try container.encode(issue, forKey: .issue)
        case .issues(let issues): try container.encode(issues, forKey: .issues)
        }
    }
}

/// `OK` to `RELOAD`.
package struct ReloadReply: Codable, Sendable {
    package var id: Int64
    /// How many issues the configuration added (an integer, always).
    package var addedIssues: Int

    package init(id: Int64, addedIssues: Int) {
        self.id = id
        self.addedIssues = addedIssues
    }
}

/// `OK` to `READ`: the issue now being read, when one was named.
package struct ReadReply: Codable, Sendable {
    package var id: Int64
    package var issue: WireIssue?

    package init(id: Int64, issue: WireIssue?) {
        self.id = id
        self.issue = issue
    }
}

/// `OK` to `PURGE`: the issues removed, oldest first.
package struct PurgeReply: Codable, Sendable {
    package var id: Int64
    package var removed: [String]

    package init(id: Int64, removed: [String]) {
        self.id = id
        self.removed = removed
    }
}
