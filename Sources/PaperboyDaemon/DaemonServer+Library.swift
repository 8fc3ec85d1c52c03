import Dispatch
import Foundation
import Paperboy
import PaperboyWire
import PaperboyFraming

/// The library requests (`SHELF`, `ASSETS`, `STATES`, `READ`, `PURGE`: what `paperboy issues`, `status`,
/// `read` and `purge` ask a daemon), and those that serve the rest of `Library`'s API (`REMOVE`,
/// `MARKREAD`, `CHECKSUM`, `WAIT`, `COUNTS`, `ACTIVITY`), each through the library's in-process backend.
extension DaemonServer {
    /// Items in a `SHELF` or `ASSETS` page, fewer when their JSON would not fit in a frame.
    static let pageSize = 500

    /// Answers a library request (`READ`, `PURGE`, `REMOVE`, `MARKREAD`, `CHECKSUM`, `ACTIVITY`;
    /// the pages are ``pageFrame(_:)``'s); `nil` for another.
    func answerLibrary(_ request: Request) throws -> Reply? {
        switch request {
        case .activity(let request):
            return .activity(ActivityReply(id: request.id, activity: try served().activity()))
        case .read(let request):
            var issue: WireIssue?
            if let name = request.issue {
                let found = try existingIssue(name)
                try served().setCurrentlyReadingIssue(named: found.name)
                if request.markRead ?? true { try served().markRead(issue: found.name) }
                issue = try Self.wire(found, assets: false)
            } else {
                try served().setCurrentlyReadingIssue(named: nil)
            }
            return .read(ReadReply(id: request.id, issue: issue))
        case .purge(let request):
            if let keep = request.keep, keep < 0 { throw WireError(DaemonProtocol.ErrorCode.badRequest, "PURGE: keep must be 0 or more") }
            if let budget = request.budgetBytes {
                do throws(BoundaryError) {
                    _ = try ByteCount(budget, door: "PURGE budget_bytes")
                } catch {
                    throw WireError(DaemonProtocol.ErrorCode.badRequest, error.description)
                }
            }
            let removed = try waitFor { [library] () async throws(LibraryError) -> [String] in
                try await library.purge(keep: request.keep, budgetBytes: request.budgetBytes)
            }
            return .purge(PurgeReply(id: request.id, removed: removed))
        case .remove(let request):
            _ = try existingIssue(request.issue)
            let served = try served()
            try waitFor { () async throws(LibraryError) in try await served.removeIssue(named: request.issue) }
            return .empty(EmptyReply(id: request.id))
        case .markRead(let request):
            _ = try existingIssue(request.issue)
            try served().markRead(issue: request.issue)
            let issue = try existingIssue(request.issue)
            return .issue(IssueReply(id: request.id, issue: try Self.wire(issue, assets: false)))
        case .checksum(let request):
            guard let asset = try served().asset(identifier: request.asset) else {
                throw LibraryError(.assetNotFound, "no asset with identifier '\(request.asset)'")
            }
            try served().updateExpectedSHA256(request.sha256, ofAsset: asset.identifier)
            return .asset(AssetReply(id: request.id, asset: Self.wire(asset)))
        default:
            return nil
        }
    }

    /// The `OK` frame of a page request (`SHELF`, `ASSETS`, `STATES`, `COUNTS`), encoded once: the page is
    /// fitted to a frame by encoding it, and that encoding is the answer (encoding it again to send
    /// it was half of what a page cost); `nil` for another request.
    func pageFrame(_ request: Request) throws -> Data? {
        switch request {
        case .shelf(let request): try shelfPage(request)
        case .assets(let request): try assetsPage(request)
        case .states(let request): try statesPage(request)
        case .counts(let request): try countsPage(request)
        default: nil
        }
    }

    /// The most damaged rows a `SHELF` reply names (each a few hundred bytes: the frame stays small).
    static let maxDamagedRows = 100

    private func shelfPage(_ request: ShelfRequest) throws -> Data {
        let offset = max(0, request.offset ?? 0)
        let all = library.issues
        let issues = all.dropFirst(offset).prefix(Self.pageSize)
        // A page past the last issue (the library-wide fields alone) counts no assets.
        let counts = issues.isEmpty ? [:] : try library.shelfCounts()
        let page = issues.map { LibraryShelf.Entry($0, counts: counts) }
        var reply = ShelfReply(id: request.id, libraryPath: library.root.path, badge: library.badgeCount,
                               reading: library.currentlyReadingIssue?.name, bandwidth: library.recordedBandwidthStatistics,
                               issues: Array(page))
        if offset == 0, let damaged = try? library.damagedRows, !damaged.isEmpty {
            reply.damagedRows = damaged.prefix(Self.maxDamagedRows).map(WireDamagedRow.init)
        }
        reply.network = library.networkStatus.description
        return try Self.fitted(count: page.count) { count in
            reply.issues = Array(page.prefix(count))
            reply.nextOffset = offset + count < all.count ? offset + count : nil
            return .shelf(reply)
        }
    }

    private func countsPage(_ request: CountsRequest) throws -> Data {
        let offset = max(0, request.offset ?? 0)
        let all = library.issues
        let issues = all.dropFirst(offset).prefix(Self.pageSize)
        // The library's own counts (one aggregate query), as `Library.counts()` in process.
        let counts = issues.isEmpty ? [:] : try served().counts()
        let page = issues.compactMap { issue in counts[issue.name].map { IssueCounts(name: issue.name, counts: $0) } }
        return try Self.fitted(count: issues.count) { count in
            let taken = issues.prefix(count)
            let names = Set(taken.map(\.name))
            let end = offset + taken.count
            return .counts(CountsReply(id: request.id, issues: page.filter { names.contains($0.name) },
                                       nextOffset: end < all.count ? end : nil))
        }
    }

    private func assetsPage(_ request: AssetsRequest) throws -> Data {
        let issue = try existingIssue(request.issue)
        let cursor = try Self.cursor(request.after, of: DaemonProtocol.Kind.assets)
        let (statuses, next) = try issue.assetStatuses(after: cursor, limit: Self.pageSize)
        let wired = statuses.map { WireAsset($0, issue: issue.name) }
        return try Self.fitted(count: wired.count) { count in
            let last = count < wired.count ? try issue.assetStatuses(after: cursor, limit: count).next : next
            return .assets(AssetsReply(id: request.id, assets: Array(wired.prefix(count)), next: last?.token))
        }
    }

    /// States in a `STATES` page (a few dozen bytes each), fewer when they would not fit in a frame.
    static let statesPageSize = 1_000

    private func statesPage(_ request: StatesRequest) throws -> Data {
        let issue = try existingIssue(request.issue)
        let cursor = try Self.cursor(request.after, of: DaemonProtocol.Kind.states)
        let (statuses, next) = try issue.assetStatuses(after: cursor, limit: Self.statesPageSize)
        let states = statuses.map { WireAssetState(asset: $0.identifier, state: WireState($0.state, failure: $0.failure)) }
        return try Self.fitted(count: states.count) { count in
            let last = count < states.count ? try issue.assetStatuses(after: cursor, limit: count).next : next
            return .states(StatesReply(id: request.id, states: Array(states.prefix(count)), next: last?.token))
        }
    }

    /// The cursor an `ASSETS` or `STATES` request's `after` names (`nil`: the first page).
    private static func cursor(_ token: String?, of kind: String) throws -> Issue.PageCursor? {
        guard let token else { return nil }
        guard let cursor = Issue.PageCursor(token: token) else {
            throw WireError(DaemonProtocol.ErrorCode.badRequest, "\(kind): 'after' is not a cursor of an earlier page")
        }
        return cursor
    }

    /// The frame of the reply `make` builds for the most of `count` items (halving) that fits.
    private static func fitted(count: Int, _ make: (Int) throws -> Reply) throws -> Data {
        var count = count
        while true {
            let frame = try make(count).frame
            let length = frame.count
            if length <= DaemonProtocol.maxPayloadLength || count <= 1 {
                guard length <= DaemonProtocol.maxPayloadLength + 32 else {
                    throw WireError(DaemonProtocol.ErrorCode.badRequest, "one item of the page is larger than a frame")
                }
                return frame
            }
            count /= 2
        }
    }

    /// Starts answering a `WAIT`: the `OK` comes when the asset ends or the issue is complete,
    /// after requests that arrive meanwhile (as for `NOTIFY`); the wait ends with the connection.
    func wait(_ request: WaitRequest, on connection: DaemonConnection) throws {
        let served = try served()
        let waiting: @Sendable () async throws(CancellationError) -> WaitReply
        if let asset = request.asset {
            guard served.asset(identifier: asset) != nil else { throw LibraryError(.assetNotFound, "no asset with identifier '\(asset)'") }
            waiting = { () async throws(CancellationError) in WaitReply(id: request.id, asset: try await served.waitUntilFinished(asset: asset)) }
        } else if let issue = request.issue {
            _ = try existingIssue(issue)
            waiting = { () async throws(CancellationError) in WaitReply(id: request.id, issue: try await served.waitUntilAvailable(issue: issue)) }
        } else {
            throw WireError(DaemonProtocol.ErrorCode.badRequest, "WAIT: needs 'asset' or 'issue'")
        }
        connection.run {
            guard let reply = try? await waiting() else { return }
            // After the events of the change it answers (the client's mirror then holds them).
            self.sendAfterEvents(Reply.wait(reply).frame, on: connection)
        }
    }

    /// Runs `body` to the end on the calling (connection) thread, so that requests stay answered
    /// in order; the connection's reader is a thread of its own, not one of the task pool's.
    func waitFor<T: Sendable>(_ body: @escaping @Sendable () async throws(LibraryError) -> T) throws(LibraryError) -> T {
        let done = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var result: Result<T, LibraryError>?
        Task {
            do throws(LibraryError) {
                result = .success(try await body())
            } catch {
                result = .failure(error)
            }
            done.signal()
        }
        done.wait()
        guard let result else { throw LibraryError(.cancelled, "the request was not answered") }
        return try result.get()
    }
}
