import Foundation
import Logging
import Synchronization

/// Helper processes of one command: started on demand, kept for the next transfer when they
/// ended one cleanly, retired after a while without work.
final class HelperPool: Sendable {
    private struct State {
        var idle: [(helper: HelperProcess, since: ContinuousClock.Instant)] = []
        var live: [pid_t: HelperProcess] = [:]
    }

    let command: [String]
    let environment: [String: String]
    let maxIdle: Int
    let keepAlive: Duration
    let grace: Duration
    let logger: Logger
    private let state = Mutex<State>(State())

    init(command: [String], environment: [String: String], maxIdle: Int, keepAlive: Duration, grace: Duration, logger: Logger) {
        self.command = command
        self.environment = environment
        self.maxIdle = maxIdle
        self.keepAlive = keepAlive
        self.grace = grace
        self.logger = logger
    }

    /// The pids of the helpers started and not yet known to have exited.
    var livePIDs: [pid_t] {
        state.withLock { state in
            state.live = state.live.filter { $0.value.exit == nil }
            return state.live.keys.sorted()
        }
    }

    /// An idle helper that is still running, if any.
    func takeIdle() -> HelperProcess? {
        while let helper = state.withLock({ $0.idle.popLast()?.helper }) {
            if helper.exit == nil { return helper }
            helper.shutdown(graceful: false, grace: grace)
        }
        return nil
    }

    /// Starts a new helper (the handshake is the caller's).
    func launch() async throws -> HelperProcess {
        let helper = try await HelperProcess.launch(command: command, environment: environment, logger: logger)
        state.withLock { $0.live[helper.pid] = helper }
        return helper
    }

    /// Gives a helper back after a transfer: kept for the next one when `reusable`, else stopped.
    func release(_ helper: HelperProcess, reusable: Bool) {
        guard reusable, helper.exit == nil else {
            helper.shutdown(graceful: false, grace: grace)
            return
        }
        let since = ContinuousClock.now
        let kept = state.withLock { state -> Bool in
            guard state.idle.count < maxIdle else { return false }
            state.idle.append((helper, since))
            return true
        }
        guard kept else {
            helper.shutdown(graceful: true, grace: grace)
            return
        }
        DispatchQueue.global().asyncAfter(deadline: .now() + keepAlive.timeInterval) { [self] in
            let expired = state.withLock { state -> Bool in
                guard let index = state.idle.firstIndex(where: { $0.helper === helper && $0.since == since }) else { return false }
                state.idle.remove(at: index)
                return true
            }
            if expired { helper.shutdown(graceful: true, grace: grace) }
        }
    }

    /// Stops every idle helper (they exit on end of input).
    func retireIdle() {
        let idle = state.withLock { state in
            defer { state.idle = [] }
            return state.idle
        }
        for (helper, _) in idle { helper.shutdown(graceful: true, grace: grace) }
    }
}
