import Foundation
import Paperboy

/// What a library does before it is killed with SIGKILL, for the library behaviour suite's kill
/// scenarios: written once against the shared API, run by `BehaviourKillApp` on a library in a
/// process of its own, or by the suite itself on a library served by a daemon it then kills.
///
/// Each life adds the issue ``issueName`` and one asset, works until its kill point, then calls
/// `reached`. `reached` returns only once the process serving the library is dead (in
/// `BehaviourKillApp` it never returns: the app is the process killed).
public enum FirstLife: Codable, Sendable, CustomStringConvertible {
    /// Downloads `url` (no destination path) until `bytes` are written: killed mid-transfer.
    case midTransfer(url: URL, bytes: Int64)
    /// Downloads `url` (no destination path): killed inside the delegate's `didFinish`.
    case insideDidFinish(url: URL)
    /// Downloads `url` to a delegate that throws from `didFinish` (the file stays in the inbox):
    /// killed after the throw.
    case afterDelegateThrew(url: URL)
    /// Downloads `url` until `bytes` are written and pauses it: killed as soon as `pause()`
    /// returned (the transfer may still be stopping).
    case whilePaused(url: URL, bytes: Int64)
    /// Adds an asset of `url` and asks for it: killed as soon as `download()` returned.
    case afterDownloadCall(url: URL)
    /// Downloads `url` until `bytes` are written and cancels it: killed as soon as `cancel()`
    /// returned (the transfer may still be stopping).
    case afterCancel(url: URL, bytes: Int64)
    /// Downloads `url`, which fails: killed once it failed.
    case afterFailure(url: URL)
    /// Downloads `url` to `destinationPath`: killed once it is delivered.
    case afterDelivery(url: URL, destinationPath: String)

    /// The issue every life adds.
    public static let issueName = "killed"

    public var description: String {
        switch self {
        case .midTransfer(_, let bytes): "killed after \(bytes) bytes"
        case .insideDidFinish: "killed inside didFinish"
        case .afterDelegateThrew: "killed after didFinish threw"
        case .whilePaused: "killed once pause() returned"
        case .afterDownloadCall: "killed once download() returned"
        case .afterCancel: "killed once cancel() returned"
        case .afterFailure: "killed after a failure"
        case .afterDelivery: "killed after the delivery"
        }
    }

    /// Lives this life on `library`; calls `reached` at the kill point.
    public func run(on library: Library, reached: @escaping @Sendable () async -> Void) async throws {
        let issue = try await library.addIssue(name: Self.issueName, date: Date(timeIntervalSince1970: 1_795_000_000))
        let point = KillPoint()
        switch self {
        case .midTransfer(let url, let bytes):
            let asset = try await issue.addAsset(AssetRequest(url: url))
            try await asset.download()
            try await Self.until("\(bytes) bytes") { try await asset.status().totalBytesWritten >= bytes }
        case .insideDidFinish(let url):
            let asset = try await issue.addAsset(AssetRequest(url: url))
            // didFinish signals, then waits for the kill (for ever, in a killed app).
            try await asset.download(delegate: LifeDelegate(point: point, holdsFinish: reached))
            await point.reached()
            return
        case .afterDelegateThrew(let url):
            let asset = try await issue.addAsset(AssetRequest(url: url))
            try await asset.download(delegate: LifeDelegate(point: point, throwsFromFinish: true))
            await point.reached()
            try await Self.until("the file to wait in the inbox") { try await asset.status().state == .finished }
        case .whilePaused(let url, let bytes):
            let asset = try await issue.addAsset(AssetRequest(url: url))
            try await asset.download()
            try await Self.until("\(bytes) bytes") { try await asset.status().totalBytesWritten >= bytes }
            try await asset.pause()
        case .afterDownloadCall(let url):
            let asset = try await issue.addAsset(AssetRequest(url: url))
            try await asset.download()
        case .afterCancel(let url, let bytes):
            let asset = try await issue.addAsset(AssetRequest(url: url))
            try await asset.download()
            try await Self.until("\(bytes) bytes") { try await asset.status().totalBytesWritten >= bytes }
            try await asset.cancel()
        case .afterFailure(let url):
            let asset = try await issue.addAsset(AssetRequest(url: url))
            try await asset.download()
            guard case .failed = try await asset.waitUntilFinished() else { throw LifeError("\(url) did not fail") }
        case .afterDelivery(let url, let destinationPath):
            let asset = try await issue.addAsset(AssetRequest(url: url, destinationPath: destinationPath))
            try await asset.download()
            guard try await asset.waitUntilFinished() == .delivered else { throw LifeError("\(url) was not delivered") }
            guard try await issue.waitUntilAvailable() == .available else { throw LifeError("the issue is not available") }
        }
        await reached()
    }

    /// Polls `condition` (a state read through the shared API) every 5 ms, for at most 60 s.
    static func until(_ what: String, _ condition: () async throws -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(60)
        while try await !condition() {
            guard ContinuousClock.now < deadline else { throw LifeError("timed out waiting for \(what)") }
            try await Task.sleep(for: .milliseconds(5))
        }
    }
}

/// A first life that went otherwise than scripted.
public struct LifeError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// Where a life's delegate says the kill point is reached; awaited by the life.
final class KillPoint: Sendable {
    private let stream: AsyncStream<Void>
    private let continuation: AsyncStream<Void>.Continuation

    init() {
        (stream, continuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    func signal() { continuation.yield() }

    func reached() async {
        var iterator = stream.makeAsyncIterator()
        _ = await iterator.next()
    }
}

/// The delegate of a first life: signals its kill point inside `didFinish`, or after throwing
/// from it.
final class LifeDelegate: AssetDownloadDelegate {
    struct Refused: Error {}

    let point: KillPoint
    let holdsFinish: (@Sendable () async -> Void)?
    let throwsFromFinish: Bool

    init(point: KillPoint, holdsFinish: (@Sendable () async -> Void)? = nil, throwsFromFinish: Bool = false) {
        self.point = point
        self.holdsFinish = holdsFinish
        self.throwsFromFinish = throwsFromFinish
    }

    func download(_ asset: AssetDownload, didFinishDownloadingTo destinationURL: URL) async throws {
        if let holdsFinish {
            point.signal()
            await holdsFinish()
            throw Refused()
        }
        if throwsFromFinish {
            defer { point.signal() }
            throw Refused()
        }
    }
}
