import Foundation
import Paperboy
import PaperboyWire

/// An asset of a daemon's library: its identifier, and a snapshot of its state and bytes when
/// it was read; methods ask the daemon.
public struct RemoteAsset: Sendable, Hashable, CustomStringConvertible {
    /// The stable identifier.
    public let identifier: String
    /// The issue's name.
    public let issueName: String
    /// The state when this value was read.
    public let state: AssetState
    /// Bytes on disk when this value was read.
    public let totalBytesWritten: Int64
    /// The expected size, when known.
    public let expectedTotalBytes: Int64?
    /// The request (its headers left out: they may hold secrets).
    public let request: AssetRequest?
    /// The app's JSON given when the asset was added (absent from handles made from events).
    public let userInfo: JSONValue?
    /// Failed attempts since the asset last made progress, when this value was read.
    public let attempts: Int
    /// Why the asset failed, when ``state`` is failed: the daemon's ``LibraryError``, with the
    /// same code, reason, transport code, message and retryable as in the daemon.
    public let failure: LibraryError?
    let client: PaperboyClient

    init(client: PaperboyClient, _ wire: WireAsset) {
        self.client = client
        identifier = wire.id
        issueName = wire.issue
        state = wire.state.state
        totalBytesWritten = max(0, wire.totalBytesWritten)
        expectedTotalBytes = wire.expectedTotalBytes.map { max(0, $0) }
        request = wire.request
        userInfo = wire.userInfo
        attempts = max(0, wire.attempts)
        failure = wire.state.failure
    }

    init(client: PaperboyClient, identifier: String, issueName: String) {
        self.client = client
        self.identifier = identifier
        self.issueName = issueName
        state = .idle
        totalBytesWritten = 0
        expectedTotalBytes = nil
        request = nil
        userInfo = nil
        attempts = 0
        failure = nil
    }

    /// The asset's issue, asked of the daemon.
    public func issue() async throws(LibraryError) -> RemoteIssue? {
        try await client.issue(named: issueName)
    }

    /// Starts, resumes or reconnects; with a delegate, the finished file waits in the daemon's
    /// inbox until the delegate's `didFinishDownloadingTo` returns (then it is acknowledged).
    public func download(delegate: (any RemoteDownloadDelegate)? = nil) async throws(LibraryError) {
        try await client.attach(delegate, to: identifier)
    }

    /// Stops the transfer, keeping the bytes.
    public func pause() async throws(LibraryError) { try await client.command(Request.pause, asset: identifier) }

    /// Continues a paused transfer.
    public func resume() async throws(LibraryError) { try await client.command(Request.resume, asset: identifier) }

    /// Stops the transfer and removes its partial bytes.
    public func cancel() async throws(LibraryError) { try await client.command(Request.cancel, asset: identifier) }

    /// The current state, asked of the daemon.
    public func refreshed() async throws(LibraryError) -> RemoteAsset { try await client.status(of: identifier) }

    /// Waits until the asset is delivered, fails or is cancelled (`.closed` if the connection ends).
    public func waitUntilFinished() async throws(LibraryError) -> AssetOutcome {
        try await client.waitUntilFinished(identifier)
    }

    public var description: String { "RemoteAsset(\(identifier))" }
    public static func == (lhs: RemoteAsset, rhs: RemoteAsset) -> Bool { lhs.identifier == rhs.identifier && lhs.client === rhs.client }
    public func hash(into hasher: inout Hasher) { hasher.combine(identifier) }
}

/// Receives the events of one download served by a daemon: ``AssetDownloadDelegate``'s trio and
/// failure, for a ``RemoteAsset``. Every method has a default.
///
/// Calls for one client arrive in order and never overlap. `didFinishDownloadingTo` gets a file
/// in the daemon's inbox: move it to keep it; when the call returns, the client acknowledges it
/// and the daemon moves what is left to its destination path (or deletes it). Throwing keeps it
/// in the inbox; it is handed over again at the next connection.
public protocol RemoteDownloadDelegate: Sendable {
    /// Bytes arrived (coalesced); `bytesWritten` counts those since the previous call.
    func download(_ asset: RemoteAsset, didWriteData bytesWritten: Int64, totalBytesWritten: Int64, expectedTotalBytes: Int64?)
    /// A transfer continues from bytes already on disk.
    func download(_ asset: RemoteAsset, didResumeAt totalBytesWritten: Int64, expectedTotalBytes: Int64?)
    /// The file is complete; it waits in the daemon's inbox until this returns.
    func download(_ asset: RemoteAsset, didFinishDownloadingTo destinationURL: URL) async throws
    /// The download gave up (or was cancelled).
    func download(_ asset: RemoteAsset, didFailWithError error: LibraryError)
    /// A transfer needs credentials or a trust decision that the daemon's configuration did not
    /// give (see ``AssetDownloadDelegate/download(_:didReceive:)``).
    ///
    /// The daemon asks the client that claimed the asset (the last one to call
    /// ``RemoteAsset/download(delegate:)`` with a delegate) and waits `[daemon] challenge_timeout` (60 s); the answer
    /// serves this challenge only and is never kept, logged or shown in a status. The default
    /// performs default handling (the transfer fails with an authentication error).
    func download(_ asset: RemoteAsset, didReceive challenge: AuthChallenge) async -> AuthChallengeDisposition
}

extension RemoteDownloadDelegate {
    public func download(_ asset: RemoteAsset, didWriteData bytesWritten: Int64, totalBytesWritten: Int64, expectedTotalBytes: Int64?) {}
    public func download(_ asset: RemoteAsset, didResumeAt totalBytesWritten: Int64, expectedTotalBytes: Int64?) {}
    public func download(_ asset: RemoteAsset, didFinishDownloadingTo destinationURL: URL) async throws {}
    public func download(_ asset: RemoteAsset, didFailWithError error: LibraryError) {}
    public func download(_ asset: RemoteAsset, didReceive challenge: AuthChallenge) async -> AuthChallengeDisposition {
        .performDefaultHandling
    }
}

/// A library-wide event from the daemon.
public enum RemoteEvent: Sendable, Equatable {
    /// An asset changed state.
    case assetStateChanged(asset: String, AssetState)
    /// Every asset of the issue has been delivered.
    case issueAvailable(String)
    /// The badge (new issues) changed.
    case badge(Int)
    /// An asset's file is complete and waits for a client (its path in the daemon's inbox).
    case finished(asset: String, path: String)

    init?(_ event: Event, client: PaperboyClient) {
        switch event {
        case .state(let asset, let state): self = .assetStateChanged(asset: asset, state.state)
        case .issueAvailable(let issue): self = .issueAvailable(issue)
        case .badge(let badge): self = .badge(max(0, badge))
        case .finished(let asset, _, let path): self = .finished(asset: asset, path: path)
        case .progress, .resumed, .failed: return nil
        }
    }
}
