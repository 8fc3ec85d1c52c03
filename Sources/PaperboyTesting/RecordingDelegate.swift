import Foundation
import Paperboy
import Synchronization

/// An ``AssetDownloadDelegate`` that records every call, for tests.
///
/// By default it copies the finished file to ``keptFiles`` (so tests can check its bytes after
/// the library deleted it). It can also move the file, throw from `didFinish`, or never return.
public final class RecordingDelegate: AssetDownloadDelegate {
    /// One recorded call.
    public enum Event: Sendable, Equatable {
        case progress(bytesWritten: Int64, total: Int64, expected: Int64?)
        case resumed(total: Int64, expected: Int64?)
        case finished(path: String, existed: Bool)
        case failed(code: String, message: String)
        case challenge(kind: String)
        case willResume(url: URL)
    }

    /// What to do in `didFinish`.
    public enum FinishBehaviour: Sendable {
        /// Copy the file into a temporary folder (see ``keptFiles``).
        case copy
        /// Move the file to this URL.
        case move(to: URL)
        /// Throw, asking the library to keep the file in its inbox.
        case throwError
        /// Never return (simulates an app killed during the call).
        case hang
    }

    private let recorded = Mutex<[Event]>([])
    private let kept = Mutex<[Data]>([])
    private let failed = Mutex<[LibraryError]>([])
    private let finishBehaviour: FinishBehaviour
    private let challengeAnswer: @Sendable (AuthChallenge) -> AuthChallengeDisposition
    private let refresh: @Sendable (AssetRequest) -> AssetRequest
    private let ended = Mutex<[CheckedContinuation<Void, Never>]>([])
    private let isEnded = Mutex<Bool>(false)

    /// Creates a delegate.
    public init(
        finish: FinishBehaviour = .copy,
        challengeAnswer: @escaping @Sendable (AuthChallenge) -> AuthChallengeDisposition = { _ in .performDefaultHandling },
        refresh: @escaping @Sendable (AssetRequest) -> AssetRequest = { $0 }
    ) {
        finishBehaviour = finish
        self.challengeAnswer = challengeAnswer
        self.refresh = refresh
    }

    /// Every call so far, in order.
    public var events: [Event] { recorded.withLock { $0 } }

    /// The errors received in `didFail`, whole (``Event/failed(code:message:)`` keeps their code and message).
    public var failures: [LibraryError] { failed.withLock { $0 } }

    /// Contents of the files received in `didFinish` (with the `.copy` behaviour).
    public var keptFiles: [Data] { kept.withLock { $0 } }

    /// Waits until `didFinish` or `didFail` was called (returns at once if it was), or the timeout
    /// (a ``WaitBudget``) is spent.
    public func waitForEnd(timeout: Duration = .seconds(30)) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                    let done = self.isEnded.withLock { ended in ended }
                    if done { continuation.resume() } else { self.ended.withLock { $0.append(continuation) } }
                }
            }
            group.addTask { try? await WaitBudget.spend(timeout) }
            await group.next()
            group.cancelAll()
            // Release a waiter left behind by the timeout.
            for continuation in self.ended.withLock({ list in defer { list = [] }; return list }) { continuation.resume() }
        }
    }

    private func end() {
        isEnded.withLock { $0 = true }
        for continuation in ended.withLock({ list in defer { list = [] }; return list }) { continuation.resume() }
    }

    public func download(_ asset: AssetDownload, didWriteData bytesWritten: Int64, totalBytesWritten: Int64, expectedTotalBytes: Int64?) {
        recorded.withLock { $0.append(.progress(bytesWritten: bytesWritten, total: totalBytesWritten, expected: expectedTotalBytes)) }
    }

    public func download(_ asset: AssetDownload, didResumeAt totalBytesWritten: Int64, expectedTotalBytes: Int64?) {
        recorded.withLock { $0.append(.resumed(total: totalBytesWritten, expected: expectedTotalBytes)) }
    }

    public func download(_ asset: AssetDownload, didFinishDownloadingTo destinationURL: URL) async throws {
        let existed = FileManager.default.fileExists(atPath: destinationURL.path)
        recorded.withLock { $0.append(.finished(path: destinationURL.path, existed: existed)) }
        switch finishBehaviour {
        case .copy:
            if let data = try? Data(contentsOf: destinationURL) { kept.withLock { $0.append(data) } }
            end()
        case .move(let target):
            try? FileManager.default.removeItem(at: target)
            try FileManager.default.moveItem(at: destinationURL, to: target)
            end()
        case .throwError:
            end()
            throw CocoaError(.userCancelled)
        case .hang:
            end()
            while true { try await Task.sleep(for: .seconds(3600)) }
        }
    }

    public func download(_ asset: AssetDownload, didFailWithError error: LibraryError) {
        recorded.withLock { $0.append(.failed(code: error.code.rawValue, message: error.message)) }
        failed.withLock { $0.append(error) }
        end()
    }

    public func download(_ asset: AssetDownload, didReceive challenge: AuthChallenge) async -> AuthChallengeDisposition {
        recorded.withLock { $0.append(.challenge(kind: challenge.kind.rawValue)) }
        return challengeAnswer(challenge)
    }

    public func download(_ asset: AssetDownload, willResumeWith request: AssetRequest) async -> AssetRequest {
        recorded.withLock { $0.append(.willResume(url: request.url)) }
        return refresh(request)
    }
}
