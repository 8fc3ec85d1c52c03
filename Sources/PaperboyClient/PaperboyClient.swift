import Foundation
import Paperboy
import PaperboyWire
import Synchronization

/// A library served by `paperboy daemon`, with the shape of ``Library``: issues, assets,
/// `download(delegate:)` with the callback trio, events, waits.
///
/// ```swift
/// let library = try await PaperboyClient.connect(socket: socketURL)
/// let issue = try await library.addIssue(name: "2026-11-21", date: .now)
/// let asset = try await issue.addAsset(AssetRequest(url: source, destinationPath: "magazine.pdf"))
/// try await asset.download(delegate: myDelegate)
/// ```
///
/// Downloads run in the daemon and go on when the app exits. A finished file of an asset
/// downloaded with a delegate waits in the daemon's inbox until a client's delegate returns from
/// ``RemoteDownloadDelegate/download(_:didFinishDownloadingTo:)``; a client that was not
/// connected gets it when it attaches a delegate again (at launch, as with ``Library``:
/// `for asset in try await library.downloadingAssets() { try await asset.download(delegate: d) }`).
public final class PaperboyClient: Sendable {
    let connection: ClientConnection
    private let state = Mutex(State())
    private let wideEvents = Mutex<[UUID: AsyncStream<RemoteEvent>.Continuation]>([:])

    private struct State {
        var delegates: [String: [any RemoteDownloadDelegate]] = [:]
        /// Finished files announced while no delegate of this client was attached to the asset.
        var parked: [String: String] = [:]
        /// Assets whose `finished` is being handed to delegates (a replay is ignored meanwhile).
        var delivering: Set<String> = []
        var subscribed = false
        var waiters: [String: [CheckedContinuation<AssetOutcome, Never>]] = [:]
    }

    private init(connection: ClientConnection) {
        self.connection = connection
        let events = connection.events
        Task { [self] in
            for await event in events { await dispatch(event) }
            finishAll()
        }
        let challenges = connection.challenges
        Task { [self] in
            for await challenge in challenges {
                Task { await answer(challenge) }
            }
        }
    }

    /// Connects to the daemon listening on `socket`.
    ///
    /// - Parameters:
    ///   - name: how the daemon's log names this client.
    ///   - clock: where the wait for the daemon's `HELLO` (at most 10 s) is measured; tests pass
    ///     PaperboyTesting's `TestClock`.
    /// - Throws: ``LibraryError`` `.transport` when no daemon listens there, it refuses, or it
    ///   does not answer `HELLO` in time.
    public static func connect(socket: URL, name: String = "PaperboyClient",
                               clock: any LibraryClock = SystemClock()) async throws(LibraryError) -> PaperboyClient {
        PaperboyClient(connection: try await ClientConnection.connect(socket: socket, name: name, clock: clock))
    }

    /// Closes the connection; downloads go on in the daemon.
    public func disconnect() {
        connection.close()
    }

    // MARK: Issues and assets

    /// Every issue.
    public func issues() async throws(LibraryError) -> [RemoteIssue] {
        try await statusIssues(assets: false).map { RemoteIssue(client: self, $0) }
    }

    /// The issue named `name`, if there is one.
    public func issue(named name: String) async throws(LibraryError) -> RemoteIssue? {
        do throws(LibraryError) {
            let reply = try await connection.request(as: StatusReply.self) { .status(StatusRequest(id: $0, issue: name, assets: false)) }
            guard case .issue(let issue) = reply.subject else { throw Self.unexpected(reply, "STATUS") }
            return RemoteIssue(client: self, issue)
        } catch where error.code == .issueNotFound {
            return nil
        }
    }

    /// Adds an issue (``LibraryError/Code/duplicateIssue`` when the name is taken).
    public func addIssue(name: String, date: Date) async throws(LibraryError) -> RemoteIssue {
        let reply = try await connection.request(as: IssueReply.self) { .addIssue(AddIssueRequest(id: $0, name: name, date: date)) }
        return RemoteIssue(client: self, reply.issue)
    }

    /// The asset with this identifier, if it exists.
    public func asset(identifier: String) async throws(LibraryError) -> RemoteAsset? {
        do {
            return try await status(of: identifier)
        } catch where error.code == .assetNotFound {
            return nil
        }
    }

    /// Assets asked for and not yet delivered (waiting, downloading, or finished in the inbox).
    public func downloadingAssets() async throws(LibraryError) -> [RemoteAsset] {
        try await statusIssues(assets: true).flatMap { $0.assets ?? [] }.map { RemoteAsset(client: self, $0) }.filter { $0.state.isActive }
    }

    /// How many issues are new (available and not marked read).
    public func badgeCount() async throws(LibraryError) -> Int {
        try await connection.request(as: StatusReply.self) { .status(StatusRequest(id: $0, issue: nil, assets: false)) }.badge
    }

    /// Asks the daemon to read its configuration again; returns how many issues it added.
    public func reload() async throws(LibraryError) -> Int {
        try await connection.request(as: ReloadReply.self) { .reload(PlainRequest(id: $0)) }.addedIssues
    }

    /// Library-wide events (asset states, issues available, badge); subscribes on first use.
    public func events() async throws(LibraryError) -> AsyncStream<RemoteEvent> {
        let (stream, continuation) = AsyncStream.makeStream(of: RemoteEvent.self)
        let key = UUID()
        wideEvents.withLock { $0[key] = continuation }
        continuation.onTermination = { [weak self] _ in _ = self?.wideEvents.withLock { $0.removeValue(forKey: key) } }
        try await subscribe()
        return stream
    }

    // MARK: Internals used by RemoteIssue and RemoteAsset

    func status(of asset: String) async throws(LibraryError) -> RemoteAsset {
        let reply = try await connection.request(as: StatusReply.self) { .status(StatusRequest(id: $0, asset: asset)) }
        guard case .asset(let wire) = reply.subject else { throw Self.unexpected(reply, "STATUS") }
        return RemoteAsset(client: self, wire)
    }

    /// Every issue, through `STATUS` without `issue` or `asset`.
    private func statusIssues(assets: Bool) async throws(LibraryError) -> [WireIssue] {
        let reply = try await connection.request(as: StatusReply.self) { .status(StatusRequest(id: $0, assets: assets)) }
        guard case .issues(let issues) = reply.subject else { throw Self.unexpected(reply, "STATUS") }
        return issues
    }

    /// A `STATUS` answered with another subject than the one asked.
    private static func unexpected(_ reply: StatusReply, _ kind: String) -> LibraryError {
        LibraryError(.transport, "the daemon answered \(kind) \(reply.id) about something else than what was asked")
    }

    /// `DOWNLOAD`, `RESUME`, `PAUSE`, `CANCEL` (the `OK` carries the asset), or `ACK`.
    func command(_ make: @escaping (AssetCommand) -> Request, asset: String, deliver: Bool? = nil) async throws(LibraryError) {
        if case .ack = make(AssetCommand(id: 0, asset: asset)) {
            _ = try await connection.request(as: EmptyReply.self) { make(AssetCommand(id: $0, asset: asset, deliver: deliver)) }
        } else {
            _ = try await connection.request(as: AssetReply.self) { make(AssetCommand(id: $0, asset: asset, deliver: deliver)) }
        }
    }

    func attach(_ delegate: (any RemoteDownloadDelegate)?, to asset: String) async throws(LibraryError) {
        if let delegate { state.withLock { $0.delegates[asset, default: []].append(delegate) } }
        try await subscribe()
        try await command(Request.download, asset: asset, deliver: delegate != nil ? true : nil)
        if delegate != nil, let path = state.withLock({ $0.parked.removeValue(forKey: asset) }) {
            await deliver(asset: asset, path: path)
        }
    }

    func waitUntilFinished(_ asset: String) async throws(LibraryError) -> AssetOutcome {
        try await subscribe()
        let current = try await status(of: asset)
        if let outcome = Self.outcome(current.state, failure: current.failure) { return outcome }
        return await withCheckedContinuation { continuation in
            state.withLock { $0.waiters[asset, default: []].append(continuation) }
            // A state change between the status and this registration is caught by asking again.
            Task { [self] in
                if let now = try? await status(of: asset), let outcome = Self.outcome(now.state, failure: now.failure) {
                    settle(asset, outcome)
                }
            }
        }
    }

    private func subscribe() async throws(LibraryError) {
        let first = state.withLock { state -> Bool in
            defer { state.subscribed = true }
            return !state.subscribed
        }
        if first { _ = try await connection.request(as: EmptyReply.self) { .subscribe(PlainRequest(id: $0)) } }
    }

    /// How a wait for an asset in `state` ends, if it does; a failed one with `failure`, the
    /// daemon's error.
    private static func outcome(_ state: AssetState, failure: LibraryError?) -> AssetOutcome? {
        switch state {
        case .delivered: .delivered
        case .cancelled: .cancelled
        case .failed(let message): .failed(failure ?? LibraryError(.transport, message))
        default: nil
        }
    }

    private func settle(_ asset: String, _ outcome: AssetOutcome) {
        let waiters = state.withLock { $0.waiters.removeValue(forKey: asset) ?? [] }
        for waiter in waiters { waiter.resume(returning: outcome) }
    }

    private func finishAll() {
        let waiters = state.withLock { state in
            defer { state.waiters = [:] }
            return state.waiters.values.flatMap { $0 }
        }
        for waiter in waiters { waiter.resume(returning: .closed) }
        for continuation in wideEvents.withLock({ Array($0.values) }) { continuation.finish() }
    }

    /// Hands one event to the delegates of its asset and to the library-wide streams, in order.
    private func dispatch(_ event: Event) async {
        let asset = event.asset ?? ""
        let delegates = state.withLock { $0.delegates[asset] ?? [] }
        let handle = RemoteAsset(client: self, identifier: asset, issueName: event.issue ?? "")
        switch event {
        case .progress(_, let bytesWritten, let total, let expected):
            for delegate in delegates {
                delegate.download(handle, didWriteData: max(0, bytesWritten), totalBytesWritten: max(0, total),
                                  expectedTotalBytes: expected.map { max(0, $0) })
            }
        case .resumed(_, _, let total, let expected):
            for delegate in delegates {
                delegate.download(handle, didResumeAt: max(0, total), expectedTotalBytes: expected.map { max(0, $0) })
            }
        case .finished(_, _, let path):
            if delegates.isEmpty {
                state.withLock { $0.parked[asset] = path }
            } else {
                await deliver(asset: asset, path: path)
            }
        case .failed(_, _, let wire):
            let error = wire.libraryError
            let detached = state.withLock { $0.delegates.removeValue(forKey: asset) ?? [] }
            for delegate in detached { delegate.download(handle, didFailWithError: error) }
            // Settled here too, whichever of this and the `state` event comes first; a cancelled
            // download ends as cancelled, as in process.
            settle(asset, error.code == .cancelled ? .cancelled : .failed(error))
        case .state(_, let wire):
            if let outcome = Self.outcome(wire.state, failure: wire.failure) {
                if case .cancelled = outcome {
                    let detached = state.withLock { $0.delegates.removeValue(forKey: asset) ?? [] }
                    for delegate in detached { delegate.download(handle, didFailWithError: LibraryError.cancelled(asset: asset)) }
                }
                settle(asset, outcome)
            }
        default:
            break
        }
        if let remote = RemoteEvent(event, client: self) {
            for continuation in wideEvents.withLock({ Array($0.values) }) { continuation.yield(remote) }
        }
    }

    /// Asks the asset's delegates in turn (the first answer other than default handling wins, as
    /// in the library) and sends the answer; with no delegate, default handling.
    private func answer(_ message: ChallengeMessage) async {
        let delegates = state.withLock { $0.delegates[message.asset] ?? [] }
        let handle = RemoteAsset(client: self, identifier: message.asset, issueName: message.issue ?? "")
        let challenge = message.authChallenge
        var disposition = AuthChallengeDisposition.performDefaultHandling
        for delegate in delegates {
            let answer = await delegate.download(handle, didReceive: challenge)
            if case .performDefaultHandling = answer { continue }
            disposition = answer
            break
        }
        _ = try? await connection.request(as: EmptyReply.self) { .answer(AnswerRequest(id: $0, challenge: message.challenge, disposition)) }
    }

    /// Calls each delegate's `didFinishDownloadingTo` in turn; acknowledges when none threw.
    private func deliver(asset: String, path: String) async {
        let (delegates, fresh) = state.withLock { state in
            (state.delegates[asset] ?? [], state.delivering.insert(asset).inserted)
        }
        guard fresh else { return }
        defer { _ = state.withLock { $0.delivering.remove(asset) } }
        // A full snapshot (issue, user info) for the delegate, as the library's AssetDownload has.
        let handle = (try? await status(of: asset)) ?? RemoteAsset(client: self, identifier: asset, issueName: "")
        do {
            for delegate in delegates {
                try await delegate.download(handle, didFinishDownloadingTo: URL(fileURLWithPath: path))
            }
        } catch {
            // Kept in the daemon's inbox: delivered again at the next connection.
            return
        }
        _ = state.withLock { $0.delegates.removeValue(forKey: asset) }
        try? await command(Request.ack, asset: asset)
    }
}
