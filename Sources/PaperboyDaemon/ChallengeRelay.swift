import Foundation
import Logging
import Paperboy
import PaperboyWire
import Synchronization

/// Asks the client that claimed an asset what its delegate would answer in process, and waits
/// for the answer: an authentication challenge the configuration's credentials did not answer
/// (`CHALLENGE`, answered by `ANSWER`), and a transfer about to resume from partial bytes
/// (`RESUMING`, answered by `RESUMEWITH`: the delegate's `willResumeWith`).
///
/// The outcome is the in-process library's when its delegate does not answer (a challenge gets
/// `performDefaultHandling`, which fails the transfer with an authentication error; a resumption
/// keeps its request) whenever no subscribed client claimed the asset, the client goes away, the
/// transfer is stopped, or no answer comes within ``timeout``. An answer is taken only from the
/// connection that was asked, only once, and only for that question: a credential is never kept,
/// so it answers that challenge's origin and nothing else. Neither questions nor answers are
/// logged with a secret (a challenge has none; an answer is logged by its disposition only).
final class ChallengeRelay: Sendable {
    /// What a client answered.
    private enum Answer: Sendable {
        case disposition(AuthChallengeDisposition)
        case request(AssetRequest)
    }

    private struct Waiting {
        var connection: Int
        var asset: String
        /// `challenge` or `resumption`, and what happens without an answer: for the log.
        var label: String
        var fallback: String
        var resume: @Sendable (Answer?) -> Void
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
        let answer = await ask(id, asset: asset.identifier, label: "challenge", fallback: "default handling", on: connection,
                               frame: DaemonProtocol.frame(DaemonProtocol.Kind.challenge, message))
        if case .disposition(let disposition)? = answer { return disposition }
        return .performDefaultHandling
    }

    /// Sends `RESUMING` with `request` to `connection` (when there is one) and returns the
    /// request to resume with: the client's (``ResumeWithRequest/merged(into:)``), or `request`
    /// when it cannot or does not answer.
    func askResuming(_ request: AssetRequest, asset: AssetDownload, on connection: DaemonConnection?) async -> AssetRequest {
        guard let connection, connection.isSubscribed else { return request }
        let id = UUID().uuidString
        let message = ResumingMessage(id: id, asset: asset.identifier, issue: asset.issueName, request: request)
        logger.info("asset \(asset.identifier): resuming; asking client \(connection.number) for its request (resumption \(id))")
        let answer = await ask(id, asset: asset.identifier, label: "resumption", fallback: "the request it had", on: connection,
                               frame: DaemonProtocol.frame(DaemonProtocol.Kind.resuming, message))
        if case .request(let refreshed)? = answer { return refreshed }
        return request
    }

    /// Sends `frame` (a question named `id`) and waits for its answer; `nil`: none came.
    private func ask(_ id: String, asset: String, label: String, fallback: String, on connection: DaemonConnection,
                     frame: Data) async -> Answer? {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Answer?, Never>) in
                waiting.withLock {
                    $0[id] = Waiting(connection: connection.number, asset: asset, label: label, fallback: fallback,
                                     resume: { continuation.resume(returning: $0) })
                }
                let (timeout, clock) = (timeout, clock)
                let timer = Task { [weak self] in
                    guard (try? await clock.sleep(for: timeout)) != nil else { return }
                    self?.settle(id, nil, why: "no answer within \(timeout)")
                }
                let pending = waiting.withLock { waiting -> Bool in
                    waiting[id]?.timer = timer
                    return waiting[id] != nil
                }
                if !pending { timer.cancel() }
                if Task.isCancelled { settle(id, nil, why: "the transfer stopped") }
                if !connection.send(frame) {
                    settle(id, nil, why: "the client is gone")
                }
            }
        } onCancel: {
            settle(id, nil, why: "the transfer stopped")
        }
    }

    /// Takes a client's `ANSWER`.
    ///
    /// - Throws: `unknown-challenge` when the challenge does not wait for this connection's answer;
    ///   `bad-request` for an answer that is not a disposition.
    func answer(_ request: AnswerRequest, from connection: Int) throws(WireError) {
        let disposition = try request.authDisposition()
        let mine = waiting.withLock { $0[request.challenge]?.connection == connection }
        guard mine, settle(request.challenge, .disposition(disposition), why: nil) else {
            throw WireError(DaemonProtocol.ErrorCode.unknownChallenge,
                            "ANSWER: no challenge '\(request.challenge.prefix(64))' waits for this connection's answer")
        }
    }

    /// Takes a client's `RESUMEWITH` (the library checks the request as in process: one it
    /// refuses leaves the transfer with the request it had).
    ///
    /// - Throws: `unknown-resumption` when the resumption does not wait for this connection's answer.
    func answer(_ request: ResumeWithRequest, original: (String) -> AssetRequest?, from connection: Int) throws(WireError) {
        let asset = waiting.withLock { $0[request.resuming].flatMap { $0.connection == connection ? $0.asset : nil } }
        guard let asset, let original = original(asset) else {
            throw WireError(DaemonProtocol.ErrorCode.unknownResumption,
                            "RESUMEWITH: no resumption '\(request.resuming.prefix(64))' waits for this connection's answer")
        }
        guard settle(request.resuming, .request(request.merged(into: original)), why: nil) else {
            throw WireError(DaemonProtocol.ErrorCode.unknownResumption,
                            "RESUMEWITH: no resumption '\(request.resuming.prefix(64))' waits for this connection's answer")
        }
    }

    /// The client of `connection` left: its challenges get default handling.
    func connectionClosed(_ connection: Int) {
        let ids = waiting.withLock { $0.filter { $0.value.connection == connection }.map(\.key) }
        for id in ids { settle(id, nil, why: "the client left") }
    }

    /// The daemon stops: every challenge gets default handling.
    func stop() {
        for id in waiting.withLock({ Array($0.keys) }) { settle(id, nil, why: "the daemon is stopping") }
    }

    /// Resumes the question `id` once (`nil`: no answer); `false` if it was settled already.
    @discardableResult
    private func settle(_ id: String, _ answer: Answer?, why: String?) -> Bool {
        guard let entry = waiting.withLock({ $0.removeValue(forKey: id) }) else { return false }
        entry.timer?.cancel()
        let shown = switch answer {
        case .disposition(.useCredential)?: "a credential"
        case .disposition(.performDefaultHandling)?: "default handling"
        case .disposition(.cancelAuthenticationChallenge)?: "cancel"
        case .disposition(.rejectProtectionSpace)?: "reject protection space"
        case .request?: "a request"
        case nil: entry.fallback
        }
        logger.info("asset \(entry.asset): \(entry.label) \(id): \(shown)\(why.map { " (\($0))" } ?? "")")
        entry.resume(answer)
        return true
    }
}
