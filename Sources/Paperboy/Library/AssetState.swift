import Foundation

/// Where an asset is in its life, and why it waits when it waits.
public enum AssetState: Sendable, Hashable, CustomStringConvertible {
    /// Added, and nobody asked for it yet (call ``AssetDownload/download(delegate:)``).
    case idle
    /// Asked for, not transferring now; the reason says why.
    case waiting(WaitReason)
    /// Bytes are moving.
    case downloading
    /// Complete and verified, waiting in the library's inbox for a delegate to take it.
    case finished
    /// Handed over: moved to its destination path or taken by the app's delegate.
    case delivered
    /// Gave up; the message says why. ``AssetDownload/download(delegate:)`` tries again.
    case failed(String)
    /// Cancelled by the app; partial bytes were removed.
    case cancelled

    /// A short name: `idle`, `waiting`, `downloading`, `finished`, `delivered`, `failed`, `cancelled`.
    public var name: String {
        switch self {
        case .idle: "idle"
        case .waiting: "waiting"
        case .downloading: "downloading"
        case .finished: "finished"
        case .delivered: "delivered"
        case .failed: "failed"
        case .cancelled: "cancelled"
        }
    }

    /// Whether the asset is on its way (waiting, downloading, or finished and not yet delivered).
    public var isActive: Bool {
        switch self {
        case .waiting, .downloading, .finished: true
        default: false
        }
    }

    public var description: String {
        switch self {
        case .waiting(let reason): "waiting (\(reason))"
        case .failed(let message): "failed: \(message)"
        default: name
        }
    }
}

/// Why an asset that was asked for is not transferring right now.
public enum WaitReason: Sendable, Hashable, CustomStringConvertible {
    /// Behind other transfers (global or per-host concurrency limit).
    case queued
    /// A retryable error happened; the next attempt starts at `until`.
    case retry(until: Date, attempt: Int)
    /// Paused by the app (``AssetDownload/pause()``); bytes are kept.
    case pausedByApp
    /// The current network is not allowed by the asset's ``NetworkPolicy``; bytes are kept and
    /// the transfer continues when an allowed network appears.
    case network
    /// Waiting behind the per-host concurrency limit for this host.
    case hostLimit(host: String)

    public var description: String {
        switch self {
        case .queued: "queued"
        case .retry(let until, let attempt):
            "retry \(attempt) at \(until.formatted(.iso8601))"
        case .pausedByApp: "paused by the app"
        case .network: "waiting for an allowed network"
        case .hostLimit(let host): "queued behind the per-host limit for \(host.isEmpty ? "local files" : host)"
        }
    }
}
