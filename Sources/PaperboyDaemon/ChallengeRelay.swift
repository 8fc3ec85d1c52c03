import Foundation
import Logging
import Paperboy
import PaperboyWire
import Synchronization

/// Asks the client that claimed an asset to answer an authentication challenge the
/// configuration's credentials did not, and waits for its `ANSWER`.
///
/// The outcome is the in-process library's when its delegate does not answer
/// (`performDefaultHandling`, which fails the transfer with an authentication error) whenever
/// no subscribed client claimed the asset, the client goes away, the transfer is stopped, or no
/// answer comes within ``timeout``. An answer is taken only from the connection that was asked,
/// only once, and only for that challenge: a credential is never kept, so it answers that
/// challenge's origin and nothing else. Neither challenges nor answers are logged with a secret
/// (a challenge has none; an answer is logged by its disposition only).
final class ChallengeRelay: Sendable {
    private struct Waiting {
        var connection: Int
        var asset: String
        var continuation: CheckedContinuation<AuthChallengeDisposition, Never>
        var timer: Task<Void, Never>?
    }

    private let waiting = Mutex<[String: Waiting]>([:])
    private let logger: Logger
    /// How long a client has to answer.
    let timeout: Duration
    /// Where ``timeout`` is measured.
    let clock: any LibraryClock

    init(logger: Logger, timeout: Duration, clock: any LibraryClock) {
        self.logger = logger
        self.timeout = timeout
        self.clock = clock
    }

    /// Sends `challenge` to `connection` (when there is one) and returns its answer, or
    /// `performDefaultHandling` when it cannot or does not answer.
    func ask(_ challenge: AuthChallenge, asset: AssetDownload, on connection: DaemonConnection?) async -> AuthChallengeDisposition {
        guard let connection, connection.isSubscribed else {
            logger.info("asset \(asset.identifier): \(challenge); no subscribed client claimed it, default handling")
            return .performDefaultHandling
        }
        let id = UUID().uuidString
        let message = ChallengeMessage(id: id, asset: asset.identifier, issue: asset.issue?.name, challenge)
        logger.info("asset \(asset.identifier): \(challenge); asking client \(connection.number) (challenge \(id))")
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<AuthChallengeDisposition, Never>) in
                waiting.withLock { $0[id] = Waiting(connection: connection.number, asset: asset.identifier, continuation: continuation) }
                let (timeout, clock) = (timeout, clock)
                let timer = Task { [weak self] in
                    guard (try? await clock.sleep(for: timeout)) != nil else { return }
                    self?.settle(id, .performDefaultHandling, why: "no answer within \(timeout)")
                }
                let pending = waiting.withLock { waiting -> Bool in
                    waiting[id]?.timer = timer
                    return waiting[id] != nil
                }
                if !pending { timer.cancel() }
                if Task.isCancelled { settle(id, .performDefaultHandling, why: "the transfer stopped") }
                if !connection.send(DaemonProtocol.frame(DaemonProtocol.Kind.challenge, message)) {
                    settle(id, .performDefaultHandling, why: "the client is gone")
                }
            }
        } onCancel: {
            settle(id, .performDefaultHandling, why: "the transfer stopped")
        }
    }

    /// Takes a client's `ANSWER`.
    ///
    /// - Throws: `unknown-challenge` when the challenge does not wait for this connection's answer;
    ///   `bad-request` for an answer that is not a disposition.
    func answer(_ request: AnswerRequest, from connection: Int) throws(WireError) {
        let disposition = try request.authDisposition()
        let mine = waiting.withLock { $0[request.challenge]?.connection == connection }
        guard mine, settle(request.challenge, disposition, why: nil) else {
            throw WireError(DaemonProtocol.ErrorCode.unknownChallenge,
                            "ANSWER: no challenge '\(request.challenge.prefix(64))' waits for this connection's answer")
        }
    }

    /// The client of `connection` left: its challenges get default handling.
    func connectionClosed(_ connection: Int) {
        let ids = waiting.withLock { $0.filter { $0.value.connection == connection }.map(\.key) }
        for id in ids { settle(id, .performDefaultHandling, why: "the client left") }
    }

    /// The daemon stops: every challenge gets default handling.
    func stop() {
        for id in waiting.withLock({ Array($0.keys) }) { settle(id, .performDefaultHandling, why: "the daemon is stopping") }
    }

    /// Resumes the challenge `id` once; `false` if it was settled already.
    @discardableResult
    private func settle(_ id: String, _ disposition: AuthChallengeDisposition, why: String?) -> Bool {
        guard let entry = waiting.withLock({ $0.removeValue(forKey: id) }) else { return false }
        entry.timer?.cancel()
        let answer = switch disposition {
        case .useCredential: "a credential"
        case .performDefaultHandling: "default handling"
        case .cancelAuthenticationChallenge: "cancel"
        case .rejectProtectionSpace: "reject protection space"
        }
        logger.info("asset \(entry.asset): challenge \(id): \(answer)\(why.map { " (\($0))" } ?? "")")
        entry.continuation.resume(returning: disposition)
        return true
    }
}
