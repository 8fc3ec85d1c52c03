import Foundation
import Paperboy
import PaperboyDaemon

/// The library-wide requests: the shelf, pages of assets, the issue being read, purging.
extension PaperboyClient {
    /// The library folder the daemon serves (as its `HELLO` said).
    public var libraryURL: URL { URL(fileURLWithPath: connection.library, isDirectory: true) }

    /// Makes the issue named `name` the one being read (never purged) and marks it read; `nil`
    /// clears it. As ``Library/setCurrentlyReadingIssue(_:)`` then ``Issue/markRead()``.
    ///
    /// - Throws: ``LibraryError`` `.issueNotFound` for an unknown name.
    public func setCurrentlyReadingIssue(named name: String?) async throws(LibraryError) {
        _ = try await connection.request(DaemonProtocol.Kind.read, as: LibraryChangeReply.self) { ReadRequest(id: $0, issue: name) }
    }

    /// Removes the oldest available issues, as ``Library/purge(keep:budgetBytes:)``; returns
    /// their names, oldest first.
    @discardableResult
    public func purge(keep: Int? = nil, budgetBytes: Int64? = nil) async throws(LibraryError) -> [String] {
        try await connection.request(DaemonProtocol.Kind.purge, as: LibraryChangeReply.self) {
            PurgeRequest(id: $0, keep: keep, budgetBytes: budgetBytes)
        }.removed ?? []
    }

    /// One page of the shelf (issues newest first, from `offset`).
    package func shelfPage(offset: Int) async throws(LibraryError) -> ShelfReply {
        try await connection.request(DaemonProtocol.Kind.shelf, as: ShelfReply.self) { ShelfRequest(id: $0, offset: offset) }
    }

    /// One page of an issue's assets, after the `next` of the previous page (`nil`: the first).
    package func assetsPage(issue: String, after: String?) async throws(LibraryError) -> AssetsReply {
        try await connection.request(DaemonProtocol.Kind.assets, as: AssetsReply.self) { AssetsRequest(id: $0, issue: issue, after: after) }
    }
}
