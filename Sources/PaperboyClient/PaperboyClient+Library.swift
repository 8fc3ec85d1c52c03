import Foundation
import Paperboy
import PaperboyWire

/// The library-wide requests: the shelf, pages of assets, the issue being read, purging.
extension PaperboyClient {
    /// The library folder the daemon serves (as its `HELLO` said).
    public var libraryURL: URL { URL(fileURLWithPath: connection.library, isDirectory: true) }

    /// Makes the issue named `name` the one being read (never purged) and marks it read; `nil`
    /// clears it. As ``Library/setCurrentlyReadingIssue(_:)`` then ``Issue/markRead()``.
    ///
    /// - Returns: the issue now being read.
    /// - Throws: ``LibraryError`` `.issueNotFound` for an unknown name.
    @discardableResult
    public func setCurrentlyReadingIssue(named name: String?) async throws(LibraryError) -> RemoteIssue? {
        try await connection.request(as: ReadReply.self) { .read(ReadRequest(id: $0, issue: name)) }
            .issue.map { RemoteIssue(client: self, $0) }
    }

    /// Removes the oldest available issues, as ``Library/purge(keep:budgetBytes:)``; returns
    /// their names, oldest first.
    @discardableResult
    public func purge(keep: Int? = nil, budgetBytes: Int64? = nil) async throws(LibraryError) -> [String] {
        try await connection.request(as: PurgeReply.self) {
            .purge(PurgeRequest(id: $0, keep: keep, budgetBytes: budgetBytes))
        }.removed
    }

    /// One page of the shelf (issues newest first, from `offset`).
    package func shelfPage(offset: Int) async throws(LibraryError) -> ShelfReply {
        try await connection.request(as: ShelfReply.self) { .shelf(ShelfRequest(id: $0, offset: offset)) }
    }

    /// One page of an issue's assets, after the `next` of the previous page (`nil`: the first).
    package func assetsPage(issue: String, after: String?) async throws(LibraryError) -> AssetsReply {
        try await connection.request(as: AssetsReply.self) { .assets(AssetsRequest(id: $0, issue: issue, after: after)) }
    }

    /// The whole shelf: every page of `SHELF`, the first page's other fields.
    package func shelf() async throws(LibraryError) -> ShelfReply {
        var reply = try await shelfPage(offset: 0)
        var next = reply.nextOffset
        while let offset = next {
            let page = try await shelfPage(offset: offset)
            reply.issues += page.issues
            next = page.nextOffset.flatMap { $0 > offset ? $0 : nil }
        }
        reply.nextOffset = nil
        return reply
    }

    /// Calls `body` with each asset of the issue named `issue`, read a page at a time.
    package func forEachAsset(ofIssue issue: String, _ body: (WireAsset) -> Void) async throws(LibraryError) {
        var after: String?
        repeat {
            let page = try await assetsPage(issue: issue, after: after)
            for asset in page.assets { body(asset) }
            after = page.next
        } while after != nil
    }

    /// A handle on an asset listed in a page.
    package func remoteAsset(_ wire: WireAsset) -> RemoteAsset {
        RemoteAsset(client: self, wire)
    }
}
