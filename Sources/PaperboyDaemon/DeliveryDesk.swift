import Foundation
import Logging
import Paperboy
import PaperboyWire
import Synchronization

/// The daemon's delegate for the assets whose finished files clients take (claimed assets).
///
/// Its `didFinishDownloadingTo` does not return until a client acknowledges the file: until
/// then the file stays in the library's inbox, and the library moves it to its destination (or
/// deletes it) only after. Claims are written to `daemon-claims.json` in the library folder, so
/// after a crash or restart the daemon attaches the desk again and the library delivers the
/// file again (at least once). Progress, resumption and failure go to subscribed clients.
final class DeliveryDesk: AssetDownloadDelegate {
    struct Pending {
        var path: String
        var issue: String
        var continuation: CheckedContinuation<Void, any Error>
    }

    struct Stopping: Error {}

    private struct State {
        var claims: Set<String>
        var pending: [String: Pending] = [:]
        /// The last `resumed` of each claimed asset still transferring, replayed to subscribers:
        /// after a restart the library resumes before any client is connected.
        var resumed: [String: Event] = [:]
        var stopping = false
    }

    private let state: Mutex<State>
    private let claimsFile: ClaimsFile
    /// Held while the claims file is written.
    private let saving = Mutex(())
    /// Whether the claims file of an earlier run was unreadable (set aside): the claims must be
    /// rebuilt from the files waiting in the inbox (``reclaim(_:)``).
    let claimsWereLost: Bool
    private let logger: Logger
    /// Sends an event to every subscribed connection.
    let broadcast: @Sendable (Event) -> Void
    /// Asks the client that claimed an asset to answer a challenge.
    let askClient: @Sendable (AssetDownload, AuthChallenge) async -> AuthChallengeDisposition
    /// Asks the client that claimed an asset for the request to resume it with.
    let askResuming: @Sendable (AssetDownload, AssetRequest) async -> AssetRequest

    init(libraryRoot: URL, logger: Logger, broadcast: @escaping @Sendable (Event) -> Void,
         askClient: @escaping @Sendable (AssetDownload, AuthChallenge) async -> AuthChallengeDisposition = { _, _ in .performDefaultHandling },
         askResuming: @escaping @Sendable (AssetDownload, AssetRequest) async -> AssetRequest = { $1 }) {
        claimsFile = ClaimsFile(libraryRoot: libraryRoot)
        switch claimsFile.read() {
        case .claims(let saved):
            state = Mutex(State(claims: saved))
            claimsWereLost = false
        case .corrupt(let aside, let reason):
            let kept = aside.map { "kept as \($0.lastPathComponent)" } ?? "could not be moved aside"
            logger.error("\(claimsFile.url.path) cannot be read (\(reason)); \(kept); the files waiting in the inbox are claimed again")
            state = Mutex(State(claims: []))
            claimsWereLost = true
        }
        self.logger = logger
        self.broadcast = broadcast
        self.askClient = askClient
        self.askResuming = askResuming
    }

    /// The claimed assets recorded by an earlier run.
    var claims: Set<String> { state.withLock { $0.claims } }

    /// Marks `asset` as claimed: its file waits for a client's `ACK`.
    func claim(_ asset: String) {
        let changed = state.withLock { $0.claims.insert(asset).inserted }
        if changed { saveClaims() }
    }

    /// Claims every asset of `assets` at once (rebuilding lost claims from the inbox).
    func reclaim(_ assets: [String]) {
        let changed = state.withLock { state in assets.reduce(false) { state.claims.insert($1).inserted || $0 } }
        if changed { saveClaims() }
    }

    /// Forgets a claim (the asset failed, was cancelled, or is gone).
    func release(_ asset: String) {
        let changed = state.withLock { $0.claims.remove(asset) != nil }
        if changed { saveClaims() }
    }

    /// The `finished` events of every file waiting for an acknowledgement, for a new subscriber.
    func pendingEvents() -> [Event] {
        state.withLock { state in
            state.resumed.sorted { $0.key < $1.key }.map(\.value)
                + state.pending.sorted { $0.key < $1.key }.map { Self.finishedEvent(asset: $0.key, $0.value) }
        }
    }

    /// A client acknowledged `asset`'s file: the library may move or delete it now.
    ///
    /// - Returns: `false` when no file of that asset waits for an acknowledgement.
    func acknowledge(_ asset: String) -> Bool {
        let pending = state.withLock { state -> Pending? in
            guard let pending = state.pending.removeValue(forKey: asset) else { return nil }
            state.claims.remove(asset)
            return pending
        }
        guard let pending else { return false }
        saveClaims()
        pending.continuation.resume()
        return true
    }

    /// Releases every waiting delivery without acknowledgement (the files stay in the inbox for
    /// the next run) and refuses new ones.
    func stop() {
        let waiting = state.withLock { state -> [Pending] in
            state.stopping = true
            defer { state.pending = [:] }
            return Array(state.pending.values)
        }
        for pending in waiting { pending.continuation.resume(throwing: Stopping()) }
    }

    // MARK: AssetDownloadDelegate

    func download(_ asset: AssetDownload, didWriteData bytesWritten: Int64, totalBytesWritten: Int64, expectedTotalBytes: Int64?) {
        broadcast(.progress(asset: asset.identifier, bytesWritten: bytesWritten, totalBytesWritten: totalBytesWritten,
                            expectedTotalBytes: expectedTotalBytes))
    }

    func download(_ asset: AssetDownload, didResumeAt totalBytesWritten: Int64, expectedTotalBytes: Int64?) {
        let event = Event.resumed(asset: asset.identifier, issue: asset.issue?.name, totalBytesWritten: totalBytesWritten,
                                  expectedTotalBytes: expectedTotalBytes)
        state.withLock { $0.resumed[asset.identifier] = event }
        broadcast(event)
    }

    func download(_ asset: AssetDownload, didFinishDownloadingTo destinationURL: URL) async throws {
        let id = asset.identifier
        let issue = asset.issue?.name ?? ""
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            let pending = Pending(path: destinationURL.path, issue: issue, continuation: continuation)
            let accepted = state.withLock { state -> Bool in
                guard !state.stopping else { return false }
                state.resumed[id] = nil
                state.pending[id] = pending
                return true
            }
            guard accepted else {
                continuation.resume(throwing: Stopping())
                return
            }
            logger.info("asset \(id): finished; waiting in the inbox for a client to acknowledge it")
            broadcast(Self.finishedEvent(asset: id, pending))
        }
    }

    func download(_ asset: AssetDownload, didFailWithError error: LibraryError) {
        state.withLock { $0.resumed[asset.identifier] = nil }
        release(asset.identifier)
        broadcast(.failed(asset: asset.identifier, issue: asset.issue?.name, error: WireError(error)))
    }

    func download(_ asset: AssetDownload, didReceive challenge: AuthChallenge) async -> AuthChallengeDisposition {
        await askClient(asset, challenge)
    }

    func download(_ asset: AssetDownload, willResumeWith request: AssetRequest) async -> AssetRequest {
        await askResuming(asset, request)
    }

    private static func finishedEvent(asset: String, _ pending: Pending) -> Event {
        .finished(asset: asset, issue: pending.issue, path: pending.path)
    }

    /// Writes the claims (a JSON array of asset identifiers) durably.
    ///
    /// One write at a time, each of the claims as they are when it starts: two connections'
    /// writes must neither share the temporary file nor let an older list land last.
    private func saveClaims() {
        saving.withLock { _ in
            let claims = state.withLock { $0.claims.sorted() }
            do throws(LibraryError) {
                try claimsFile.write(claims)
            } catch {
                logger.error("\(error.message)")
            }
        }
    }
}
