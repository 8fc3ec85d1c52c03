import Foundation
import Paperboy
import PaperboyWire

/// An issue of a daemon's library, as ``PaperboyClient`` returns it (a snapshot of its name,
/// date and status; methods ask the daemon).
public struct RemoteIssue: Sendable, Hashable {
    /// The unique name.
    public let name: String
    /// The publication date.
    public let date: Date
    /// The status when this value was read.
    public let status: Issue.Status
    /// Whether it was new (available and not read) when this value was read.
    public let isNew: Bool
    /// The content folder (in the daemon's library).
    public let contentURL: URL
    let client: PaperboyClient

    init(client: PaperboyClient, _ wire: WireIssue) {
        self.client = client
        name = wire.name
        date = wire.date
        status = Issue.Status(rawValue: wire.status) ?? .notDownloaded
        isNew = wire.isNew
        contentURL = URL(fileURLWithPath: wire.contentPath, isDirectory: true)
    }

    /// Adds an asset; with `download`, the daemon starts it at once (without a delegate).
    public func addAsset(_ request: AssetRequest, userInfo: JSONValue? = nil) async throws(LibraryError) -> RemoteAsset {
        // The in-process library's check of the value (the daemon checks its size against its own
        // `maxUserInfoBytes`), so that a value too deep for a frame gets the same error as in-process.
        _ = try userInfo?.userInfoJSON(for: request.url, maxBytes: DaemonProtocol.maxPayloadLength)
        let reply = try await client.connection.request(as: AssetReply.self) {
            .addAsset(AddAssetRequest(id: $0, issue: name, request: request, userInfo: userInfo, download: nil, deliver: nil))
        }
        return RemoteAsset(client: client, reply.asset)
    }

    /// The issue's assets, with their states.
    public func assets() async throws(LibraryError) -> [RemoteAsset] {
        let reply = try await client.connection.request(as: StatusReply.self) { .status(StatusRequest(id: $0, issue: name, assets: true)) }
        guard case .issue(let issue) = reply.subject else {
            throw LibraryError(.transport, "the daemon answered STATUS \(reply.id) about something else than the issue \(name)")
        }
        return (issue.assets ?? []).map { RemoteAsset(client: client, $0) }
    }

    public static func == (lhs: RemoteIssue, rhs: RemoteIssue) -> Bool { lhs.name == rhs.name && lhs.client === rhs.client }
    public func hash(into hasher: inout Hasher) { hasher.combine(name) }
}
