import Foundation
import Logging
import Paperboy
import Synchronization

/// Helper processes of one command: started on demand, kept for the next transfer to the same
/// origin when they ended one cleanly, retired after a while without work.
///
/// Idle helpers are kept per origin (scheme, host, port): a helper that logged in to a server
/// keeps its session for that server's next transfer, and is never handed another host's. Up
/// to `maxIdle` are kept per origin; with the scheduler's per-host limit as `maxIdle`, every
/// helper a burst of transfers started is kept, so N files from one host cost at most that many
/// helper starts (and logins) while they keep coming within `keepAlive` of each other.
///
/// An idle helper's retirement is a sleep of `keepAlive` on the transport's clock, cancelled
/// when the helper is taken for a transfer or retired earlier.
final class HelperPool: Sendable {
    private struct Idle {
        var id: Int
        var origin: String
        var helper: HelperProcess
        var retirement: Task<Void, Never>?
    }

    private struct State {
        var idle: [Idle] = []
        var live: [pid_t: HelperProcess] = [:]
        var nextID = 0
    }

    let command: [String]
    let environment: [String: String]
    let maxIdle: Int
    let keepAlive: Duration
    let grace: Duration
    let clock: any LibraryClock
    let logger: Logger
    private let state = Mutex<State>(State())

    init(command: [String], environment: [String: String], maxIdle: Int, keepAlive: Duration, grace: Duration,
         clock: any LibraryClock, logger: Logger) {
        self.command = command
        self.environment = environment
        self.maxIdle = maxIdle
        self.keepAlive = keepAlive
        self.grace = grace
        self.clock = clock
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
        while let idle = state.withLock({ state -> Idle? in
            guard let index = state.idle.lastIndex(where: { $0.origin == origin }) else { return nil }
            return state.idle.remove(at: index)
        }) {
            idle.retirement?.cancel()
            let helper = idle.helper
            if helper.exit == nil { return helper }
            helper.shutdown(graceful: false, grace: grace)
        }
        return nil
    }

    /// Starts a new helper (the handshake is the caller's).
    func launch() async throws -> HelperProcess {
        let helper = try await HelperProcess.launch(command: command, environment: environment, clock: clock, logger: logger)
        state.withLock { $0.live[helper.pid] = helper }
        return helper
    }

    /// Gives a helper back after a transfer to `origin`: kept for the next one when `reusable`, else stopped.
    func release(_ helper: HelperProcess, origin: String, reusable: Bool) {
        guard reusable, helper.exit == nil else {
            helper.shutdown(graceful: false, grace: grace)
            return
        }
        let kept = state.withLock { state -> Int? in
            guard state.idle.count(where: { $0.origin == origin }) < maxIdle else { return nil }
            state.nextID += 1
            state.idle.append(Idle(id: state.nextID, origin: origin, helper: helper))
            return state.nextID
        }
        guard let id = kept else {
            helper.shutdown(graceful: true, grace: grace)
            return
        }
        let (clock, keepAlive) = (self.clock, self.keepAlive)
        let retirement = Task { [weak self] in
            guard (try? await clock.sleep(for: keepAlive)) != nil else { return }
            self?.retire(id)
        }
        let waiting = state.withLock { state -> Bool in
            guard let index = state.idle.firstIndex(where: { $0.id == id }) else { return false }
            state.idle[index].retirement = retirement
            return true
        }
        // Taken again (or retired) before its timer was recorded.
        if !waiting { retirement.cancel() }
    }

    /// Retires the idle helper kept as `id`, if it is still idle (its `keepAlive` passed).
    private func retire(_ id: Int) {
        let expired = state.withLock { state -> HelperProcess? in
            guard let index = state.idle.firstIndex(where: { $0.id == id }) else { return nil }
            return state.idle.remove(at: index).helper
        }
        expired?.shutdown(graceful: true, grace: grace)
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
        for entry in idle {
            entry.retirement?.cancel()
            entry.helper.shutdown(graceful: true, grace: grace)
        }
    }
}
