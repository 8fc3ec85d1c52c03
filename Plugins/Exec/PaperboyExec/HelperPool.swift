import Foundation
import Logging
import Synchronization

/// Helper processes of one command: started on demand, kept for the next transfer to the same
/// origin when they ended one cleanly, retired after a while without work.
///
/// Idle helpers are kept per origin (scheme, host, port): a helper that logged in to a server
/// keeps its session for that server's next transfer, and is never handed another host's. Up
/// to `maxIdle` are kept per origin; with the scheduler's per-host limit as `maxIdle`, every
/// helper a burst of transfers started is kept, so N files from one host cost at most that many
/// helper starts (and logins) while they keep coming within `keepAlive` of each other.
final class HelperPool: Sendable {
    private struct State {
        var idle: [(origin: String, helper: HelperProcess, since: ContinuousClock.Instant)] = []
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

    /// The key helpers are kept under: `scheme://host:port`, lowercased.
    static func origin(of url: URL) -> String {
        "\(url.scheme?.lowercased() ?? "")://\(url.host?.lowercased() ?? ""):\(url.port.map(String.init) ?? "")"
    }

    /// An idle helper kept for `origin` that is still running, if any (the most recently used).
    func takeIdle(for origin: String) -> HelperProcess? {
        while let helper = state.withLock({ state -> HelperProcess? in
            guard let index = state.idle.lastIndex(where: { $0.origin == origin }) else { return nil }
            return state.idle.remove(at: index).helper
        }) {
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

    /// Gives a helper back after a transfer to `origin`: kept for the next one when `reusable`, else stopped.
    func release(_ helper: HelperProcess, origin: String, reusable: Bool) {
        guard reusable, helper.exit == nil else {
            helper.shutdown(graceful: false, grace: grace)
            return
        }
        let since = ContinuousClock.now
        let kept = state.withLock { state -> Bool in
            guard state.idle.count(where: { $0.origin == origin }) < maxIdle else { return false }
            state.idle.append((origin, helper, since))
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

    /// Stops a helper that will not serve another transfer.
    func stop(_ helper: HelperProcess) {
        helper.shutdown(graceful: false, grace: grace)
    }

    /// Stops every idle helper (they exit on end of input).
    func retireIdle() {
        let idle = state.withLock { state in
            defer { state.idle = [] }
            return state.idle
        }
        for (_, helper, _) in idle { helper.shutdown(graceful: true, grace: grace) }
    }
}
