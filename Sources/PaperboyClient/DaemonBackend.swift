import Foundation
import Paperboy
import PaperboyWire
import Synchronization

/// The ``LibraryBackend`` of a library served by `paperboy daemon` (``Library/connect(socket:name:clock:)``):
/// every operation is a request on the daemon's socket; the delegates and event streams of this
/// process are fed from the daemon's events.
///
/// The connection subscribes at once, so the daemon's events keep the mirror (what the
/// synchronous conveniences read) current. A finished file of an asset downloaded with a
/// delegate waits in the daemon's inbox until the delegates' `didFinishDownloadingTo` return
/// (then it is acknowledged); one announced while no delegate of this process is attached waits
/// for the next ``download(_:delegate:)`` with one (the relaunch loop).
///
/// Event calls arrive in order and never overlap; a challenge or a resumption is asked on a task
/// of its own, so it never waits behind a long `didFinishDownloadingTo`.
package final class DaemonBackend: LibraryBackend {
    let connection: ClientConnection
    /// Where waits are measured and retry dates compared (``Library/connect(socket:name:clock:)``).
    let clock: any LibraryClock
    /// What the daemon last reported (see ``DaemonMirror``).
    let mirror = Mutex(DaemonMirror())
    private let state = Mutex(State())
    /// Library-wide events, as the daemon tells them, to this process's subscribers.
    private let wideEvents = EventBroadcaster()
    /// The kinds of request this daemon answered `unknown-kind` (it predates them): not asked again.
    private let refusedKinds = Mutex<Set<String>>([])

    private struct State {
        /// The delegates of this process, by asset, with the handle they were attached with.
        var delegates: [String: [any AssetDownloadDelegate]] = [:]
        var handles: [String: AssetDownload] = [:]
        /// Finished files announced while no delegate of this process was attached to the asset.
        var parked: [String: String] = [:]
        /// The last `resumed` of a transfer no delegate of this process was attached to (a daemon
        /// replays it at subscription): the first delegate attached gets it, as in process.
        var parkedResume: [String: (total: Int64, expected: Int64?)] = [:]
        /// Assets whose `finished` is being handed to delegates (a replay is ignored meanwhile).
        var delivering: Set<String> = []
    }

    package var root: URL { URL(fileURLWithPath: connection.library, isDirectory: true) }

    /// `newer`, a request of `kind`; from a daemon that predates `kind` (it answers
    /// `unknown-kind`, as 0.1.0 does to `STATES`, `ACTIVITY` and `COUNTS`), `older` instead, which
    /// gets the same from requests it knows. A refusal is remembered: the connection asks `older`
    /// straight away from then on. `newer` must not have told anything before a refusal it lets through.
    func newerOrOlder<T>(_ kind: String, _ newer: () async throws(LibraryError) -> T,
                         older: () async throws(LibraryError) -> T) async throws(LibraryError) -> T {
        if refusedKinds.withLock({ $0.contains(kind) }) { return try await older() }
        do {
            return try await newer()
        } catch where error.code == Self.unknownKind {
            refusedKinds.withLock { _ = $0.insert(kind) }
            return try await older()
        }
    }

    private init(connection: ClientConnection, clock: any LibraryClock) {
        self.connection = connection
        self.clock = clock
        // The mirror follows the events on the reader's thread, in their order and before any
        // later answer: a synchronous read after an answer sees what the events before it said,
        // even while the dispatch below waits on a delegate (a file being handed over).
        connection.observeEvents { [weak self] event in self?.mirror.withLock { $0.apply(event) } }
        let events = connection.events
        Task { [self] in
            for await event in events { await dispatch(event) }
            wideEvents.finish()
        }
        let questions = connection.questions
        Task { [self] in
            for await question in questions {
                Task { await answer(question) }
            }
        }
    }

    /// Connects to the daemon on `socket` and subscribes to its events (without waiting for the
    /// answer: every later request is answered after it).
    package static func connect(socket: URL, name: String, clock: any LibraryClock) async throws(LibraryError) -> DaemonBackend {
        let backend = DaemonBackend(connection: try await ClientConnection.connect(socket: socket, name: name, clock: clock), clock: clock)
        backend.connection.post { .subscribe(PlainRequest(id: $0)) }
        return backend
    }

    /// Closes the connection; downloads go on in the daemon.
    package func disconnect() {
        connection.close()
    }

    /// A handle on the asset `identifier` of `issue` (the issue the mirror knows when not given).
    func handle(_ identifier: String, issue: String? = nil) -> AssetDownload {
        if let attached = state.withLock({ $0.handles[identifier] }) { return attached }
        let issueName = issue ?? mirror.withLock { $0.assets[identifier]?.issueName } ?? ""
        return AssetDownload(identifier: identifier, issueName: issueName, backend: self)
    }

    // MARK: Delegates

    /// Attaches `delegate` (when given) to `asset` and asks the daemon to download it, claimed
    /// when this process has a delegate for it; hands over a file that waited for one.
    func attach(_ delegate: (any AssetDownloadDelegate)?, to asset: AssetDownload) async throws(LibraryError) {
        let (claimed, resumed) = state.withLock { state -> (Bool, (total: Int64, expected: Int64?)?) in
            var resumed: (total: Int64, expected: Int64?)?
            if let delegate {
                let attached = state.delegates[asset.identifier] ?? []
                if attached.isEmpty { resumed = state.parkedResume.removeValue(forKey: asset.identifier) }
                if !attached.contains(where: { Self.isSame($0, delegate) }) { state.delegates[asset.identifier] = attached + [delegate] }
                state.handles[asset.identifier] = asset
            }
            return (!(state.delegates[asset.identifier] ?? []).isEmpty, resumed)
        }
        if let delegate, let resumed { delegate.download(asset, didResumeAt: resumed.total, expectedTotalBytes: resumed.expected) }
        let since = eventsApplied
        let reply = try await connection.request(as: AssetReply.self) {
            .download(AssetCommand(id: $0, asset: asset.identifier, deliver: claimed ? true : nil))
        }
        record(reply.asset, since: since)
        if claimed, let path = state.withLock({ $0.parked.removeValue(forKey: asset.identifier) }) {
            await deliver(asset: asset.identifier, path: path)
        }
    }

    /// The same object attached twice is attached once; each value is its own attachment.
    private static func isSame(_ lhs: any AssetDownloadDelegate, _ rhs: any AssetDownloadDelegate) -> Bool {
        guard type(of: lhs) is AnyClass, type(of: rhs) is AnyClass else { return false }
        return (lhs as AnyObject) === (rhs as AnyObject)
    }

    private func detach(_ asset: String) -> [any AssetDownloadDelegate] {
        state.withLock { state in
            state.handles[asset] = nil
            state.parkedResume[asset] = nil
            return state.delegates.removeValue(forKey: asset) ?? []
        }
    }

    // MARK: Events

    /// Library-wide events from now on, those `wants` accepts (all when `nil`): filtered in this
    /// process, as they arrive from the daemon.
    package func events(where wants: (@Sendable (LibraryEvent) -> Bool)? = nil) -> AsyncStream<LibraryEvent> {
        wideEvents.subscribe(where: wants)
    }

    /// Hands one event to the delegates of its asset and the library-wide streams, in order (the
    /// mirror applied it as it was read).
    private func dispatch(_ event: Event) async {
        let asset = event.asset ?? ""
        let delegates = state.withLock { $0.delegates[asset] ?? [] }
        let handle = handle(asset, issue: event.issue)
        switch event {
        case .progress(_, let bytesWritten, let total, let expected):
            for delegate in delegates {
                delegate.download(handle, didWriteData: max(0, bytesWritten), totalBytesWritten: max(0, total),
                                  expectedTotalBytes: expected.map { max(0, $0) })
            }
        case .resumed(_, _, let total, let expected):
            if delegates.isEmpty { state.withLock { $0.parkedResume[asset] = (max(0, total), expected.map { max(0, $0) }) } }
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
            for delegate in detach(asset) { delegate.download(handle, didFailWithError: error) }
        case .state(_, _, let wire):
            if case .cancelled = wire.state {
                // A cancelled download ends with a `.cancelled` failure, as in process.
                for delegate in detach(asset) { delegate.download(handle, didFailWithError: LibraryError.cancelled(asset: asset)) }
            }
            wideEvents.send(.assetStateChanged(handle, wire.state))
        case .issueAvailable(let name):
            let known = mirror.withLock { $0.issue(named: name, backend: self) }
            let issue = if let known { known } else { try? await issue(named: name) }
            if let issue { wideEvents.send(.issueDownloadCompleted(issue)) }
        case .badge:
            break
        }
    }

    /// Asks the asset's delegates what the daemon asks and sends the answer: for a challenge, the
    /// first answer other than default handling (as in process); for a resumption, the request
    /// each delegate in turn returns. With no delegate, default handling or the same request.
    private func answer(_ question: ClientConnection.Question) async {
        switch question {
        case .challenge(let message):
            let delegates = state.withLock { $0.delegates[message.asset] ?? [] }
            let handle = handle(message.asset, issue: message.issue)
            let challenge = message.authChallenge
            var disposition = AuthChallengeDisposition.performDefaultHandling
            for delegate in delegates {
                let answer = await delegate.download(handle, didReceive: challenge)
                if case .performDefaultHandling = answer { continue }
                disposition = answer
                break
            }
            _ = try? await connection.request(as: EmptyReply.self) { .answer(AnswerRequest(id: $0, challenge: message.challenge, disposition)) }
        case .resuming(let message):
            let delegates = state.withLock { $0.delegates[message.asset] ?? [] }
            let handle = handle(message.asset, issue: message.issue)
            var request = message.request
            for delegate in delegates { request = await delegate.download(handle, willResumeWith: request) }
            _ = try? await connection.request(as: EmptyReply.self) {
                .resumeWith(ResumeWithRequest(id: $0, resuming: message.resuming, request: request))
            }
        }
    }

    /// Calls each delegate's `didFinishDownloadingTo` in turn; acknowledges when none threw.
    private func deliver(asset: String, path: String) async {
        let (delegates, fresh) = state.withLock { state in
            (state.delegates[asset] ?? [], state.delivering.insert(asset).inserted)
        }
        guard fresh else { return }
        defer { _ = state.withLock { $0.delivering.remove(asset) } }
        // The whole snapshot (user info included) for the delegate's synchronous reads.
        _ = try? await status(ofAsset: asset)
        let handle = handle(asset)
        do {
            for delegate in delegates {
                try await delegate.download(handle, didFinishDownloadingTo: URL(fileURLWithPath: path))
            }
        } catch {
            // Kept in the daemon's inbox: delivered again at the next connection.
            return
        }
        _ = detach(asset)
        _ = try? await connection.request(as: EmptyReply.self) { .ack(AssetCommand(id: $0, asset: asset)) }
    }
}
