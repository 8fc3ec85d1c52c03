import Foundation
import Paperboy
import PaperboyWire

/// The daemon's own requests that the `paperboy` commands use beyond ``Library``'s API: the
/// shelf and an issue's assets a page at a time, `NOTIFY` with a feed, `READ`, `RELOAD`.
extension DaemonBackend {
    /// The library folder the daemon serves (as its `HELLO` said).
    package var libraryURL: URL { root }

    /// One page of the shelf (issues newest first, from `offset`).
    package func shelfPage(offset: Int) async throws(LibraryError) -> ShelfReply {
        let reply = try await connection.request(as: ShelfReply.self) { .shelf(ShelfRequest(id: $0, offset: offset)) }
        mirror.withLock { mirror in
            for issue in reply.issues { mirror.record(issue) }
            mirror.badge = max(0, reply.badge)
            mirror.reading = reply.reading
        }
        return reply
    }

    /// One page of an issue's assets, after the `next` of the previous page (`nil`: the first).
    package func assetsPage(issue: String, after: String?) async throws(LibraryError) -> AssetsReply {
        try await connection.request(as: AssetsReply.self) { .assets(AssetsRequest(id: $0, issue: issue, after: after)) }
    }

    /// One page of the states of an issue's assets, after the `next` of the previous page
    /// (`nil`: the first).
    package func statesPage(issue: String, after: String?) async throws(LibraryError) -> StatesReply {
        try await connection.request(as: StatesReply.self) { .states(StatesRequest(id: $0, issue: issue, after: after)) }
    }

    /// Calls `body` with the identifier and state of each asset of the issue named `issue`, read
    /// a page of `STATES` at a time; from a daemon without `STATES` (0.1.0 answers
    /// `unknown-kind`), from its `ASSETS` pages.
    package func forEachState(ofIssue issue: String, _ body: (String, AssetState) -> Void) async throws(LibraryError) {
        try await newerOrOlder(DaemonProtocol.Kind.states) { () async throws(LibraryError) in
            var after: String?
            repeat {
                let page: StatesReply
                do throws(LibraryError) {
                    page = try await statesPage(issue: issue, after: after)
                } catch where error.code == Self.unknownKind && after != nil {
                    // Only a first page's refusal means "reads ASSETS instead": later, states were told.
                    throw LibraryError(.transport, "the daemon refused STATES after answering its first page: \(error.message)")
                }
                for entry in page.states { body(entry.asset, entry.state.state) }
                after = page.next
            } while after != nil
        } older: { () async throws(LibraryError) in
            try await forEachAsset(ofIssue: issue) { asset in body(asset.id, asset.state.state) }
        }
    }

    /// The whole shelf: every page of `SHELF`, the first page's other fields.
    package func shelf() async throws(LibraryError) -> LibraryShelf {
        let first = try await shelfPage(offset: 0)
        var issues = first.issues
        var next = first.nextOffset
        while let offset = next {
            let page = try await shelfPage(offset: offset)
            issues += page.issues
            next = page.nextOffset.flatMap { $0 > offset ? $0 : nil }
        }
        return LibraryShelf(
            libraryPath: first.libraryPath, badge: first.badge, reading: first.reading, bandwidth: first.bandwidth,
            issues: issues,
            damagedRows: (first.damagedRows ?? []).compactMap(\.row), network: first.network)
    }

    /// The daemon's network and limit: a `SHELF` page past the last issue carries the
    /// library-wide fields alone, without the issues' counts.
    package func conditions() async throws(LibraryError) -> LibraryConditions {
        let page = try await shelfPage(offset: Self.pastTheLastIssue)
        return LibraryConditions(network: page.network, bandwidthLimit: page.bandwidth?.limit)
    }

    /// An offset past any shelf's last issue.
    static let pastTheLastIssue = Int(Int32.max)

    /// Each asset of the issue named `issue` as a listing shows it, read a page at a time
    /// (nothing for an issue the daemon does not have, as in process).
    package func forEachAssetListing(ofIssue issue: String, _ body: (AssetListing) -> Void) async throws(LibraryError) {
        do {
            try await forEachAsset(ofIssue: issue) { asset in
                let failure = asset.state.failure
                var listing = AssetListing(identifier: asset.id, urlString: asset.request?.url.absoluteString ?? "",
                                           destinationPath: asset.request?.destinationPath, state: asset.state.state,
                                           totalBytesWritten: asset.totalBytesWritten, expectedTotalBytes: asset.expectedTotalBytes,
                                           attempts: asset.attempts, failureCode: failure.map(AssetListing.failureCode(of:)),
                                           sha256: asset.request?.sha256, bytesReused: max(0, asset.bytesReused ?? 0))
                listing.split = asset.split
                body(listing)
            }
        } catch where error.code == .issueNotFound {
            return
        }
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

    /// `NOTIFY`, with everything the daemon answered (the feeds read, new issues, failures).
    package func notify(payload: JSONValue?, feed: String?) async throws(LibraryError) -> NotifyReply {
        // The in-process library's check, so that both refuse the same payloads with the same error.
        if let payload { try Library.checkPushPayload(payload) }
        return try await connection.request(as: NotifyReply.self) { .notify(NotifyRequest(id: $0, feed: feed, payload: payload)) }
    }

    /// Asks the daemon to read its configuration again; returns how many issues it added.
    package func reload() async throws(LibraryError) -> Int {
        try await connection.request(as: ReloadReply.self) { .reload(PlainRequest(id: $0)) }.addedIssues
    }
}
