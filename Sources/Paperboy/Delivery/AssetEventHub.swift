import Foundation
import Synchronization

/// Delivers one asset's events to its delegates, one at a time, in order.
///
/// Created only when a delegate or an event stream attaches, so assets nobody watches cost
/// nothing. Progress is coalesced by the sink before it gets here, so the queue stays short.
final class AssetEventHub: Sendable {
    let asset: AssetDownload
    private let delegates = DelegateList()
    private let continuation: AsyncStream<Job>.Continuation

    private enum Job: Sendable {
        case progress(Int64, Int64, Int64?)
        case resumed(Int64, Int64?)
        case finished(URL, CheckedContinuation<Bool, Never>)
        case failed(LibraryError)
    }

    init(asset: AssetDownload) {
        self.asset = asset
        let (stream, continuation) = AsyncStream.makeStream(of: Job.self)
        self.continuation = continuation
        let delegates = self.delegates
        Task {
            for await job in stream {
                let current = delegates.list.withLock { $0 }
                switch job {
                case .progress(let written, let total, let expected):
                    for delegate in current {
                        delegate.download(asset, didWriteData: written, totalBytesWritten: total, expectedTotalBytes: expected)
                    }
                case .resumed(let total, let expected):
                    for delegate in current {
                        delegate.download(asset, didResumeAt: total, expectedTotalBytes: expected)
                    }
                case .finished(let url, let done):
                    var keep = false
                    for delegate in current {
                        do {
                            try await delegate.download(asset, didFinishDownloadingTo: url)
                        } catch {
                            keep = true
                        }
                    }
                    delegates.list.withLock { $0.removeAll() }
                    done.resume(returning: keep)
                case .failed(let error):
                    for delegate in current { delegate.download(asset, didFailWithError: error) }
                    delegates.list.withLock { $0.removeAll() }
                }
            }
        }
    }

    deinit { continuation.finish() }

    var hasDelegates: Bool { delegates.list.withLock { !$0.isEmpty } }

    /// Adds `delegate`, unless that very object is attached already.
    ///
    /// - Parameter resumedAt: a resume nobody was told of (the transfer continued before any
    ///   delegate attached): queued for the delegates, under the lock that makes them visible to
    ///   the transfer, so that it comes before any progress.
    func attach(_ delegate: any AssetDownloadDelegate, resumedAt: (total: Int64, expected: Int64?)? = nil) {
        delegates.list.withLock { list in
            guard !list.contains(where: { Self.isSame($0, delegate) }) else { return }
            list.append(delegate)
            if let resumedAt { continuation.yield(.resumed(resumedAt.total, resumedAt.expected)) }
        }
    }

    /// Takes over the delegates of `other` (whose download turned out not to end).
    func adopt(_ other: AssetEventHub) {
        for delegate in other.delegates.list.withLock({ $0 }) { attach(delegate) }
    }

    /// Whether two delegates are one object: attaching an object twice is one attachment. Values
    /// (structs) have no identity, so each attachment of one counts.
    private static func isSame(_ lhs: any AssetDownloadDelegate, _ rhs: any AssetDownloadDelegate) -> Bool {
        guard type(of: lhs) is AnyClass, type(of: rhs) is AnyClass else { return false }
        return (lhs as AnyObject) === (rhs as AnyObject)
    }

    func progress(bytesWritten: Int64, total: Int64, expected: Int64?) {
        continuation.yield(.progress(bytesWritten, total, expected))
    }

    func resumed(total: Int64, expected: Int64?) {
        continuation.yield(.resumed(total, expected))
    }

    func failed(_ error: LibraryError) {
        continuation.yield(.failed(error))
    }

    /// Hands the finished file to every delegate, after the events queued before it.
    ///
    /// - Returns: `true` if a delegate threw, asking to keep the file in the inbox.
    func finished(at url: URL) async -> Bool {
        await withCheckedContinuation { done in
            continuation.yield(.finished(url, done))
        }
    }

    func challenge(_ challenge: AuthChallenge) async -> AuthChallengeDisposition {
        for delegate in delegates.list.withLock({ $0 }) {
            let answer = await delegate.download(asset, didReceive: challenge)
            if case .performDefaultHandling = answer { continue }
            return answer
        }
        return .performDefaultHandling
    }

    func willResume(with request: AssetRequest) async -> AssetRequest {
        var request = request
        for delegate in delegates.list.withLock({ $0 }) {
            request = await delegate.download(asset, willResumeWith: request)
        }
        return request
    }
}

/// The delegates of one asset, shared by the hub and its delivery task.
final class DelegateList: Sendable {
    let list = Mutex<[any AssetDownloadDelegate]>([])
}
