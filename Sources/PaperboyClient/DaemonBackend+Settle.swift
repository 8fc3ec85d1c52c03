import Foundation
import Paperboy
import Synchronization

extension DaemonBackend {
    package func waitUntilSettled(ofIssues issues: [String], includingNetworkWaits: Bool,
                                  retryWaitLimit: RetryWaitLimit?) async throws(LibraryError) -> Int {
        let tracker = SettleTracker(issues: Set(issues), includingNetworkWaits: includingNetworkWaits, retryWaitLimit: retryWaitLimit,
                                    clock: clock)
        let followed = Set(issues)
        let events = self.events { event in
            if case .assetStateChanged(let asset, _) = event { followed.contains(asset.issueName) } else { false }
        }
        let following = Task {
            for await event in events {
                guard case .assetStateChanged(let asset, let state) = event else { continue }
                tracker.update(asset.identifier, ofIssue: asset.issueName, state)
            }
        }
        defer { following.cancel() }
        // The issues' pages are read at the start, to confirm what the events say looks settled,
        // and when no event came for a while (one may have raced the read): not at every event,
        // since a read of a 100,000-asset sync is 200 pages.
        var read = true
        while true {
            if read {
                // A sweep reads the states after the events seen so far; an event that comes
                // while it reads is as new as the page that holds its asset, or newer.
                tracker.beginSweep()
                tracker.endSweep(try await sweep(ofIssues: issues))
            }
            if tracker.isSettled {
                if read { return tracker.networkWaits }
                read = true
                continue
            }
            read = await !tracker.changed(within: Self.quietBeforeReading)
        }
    }

    /// How long a settle waits without events before it reads the issues' pages again.
    static let quietBeforeReading = Duration.seconds(2)

    /// The state of each asset of the issues named `issues`, read a page of `STATES` at a time
    /// (states alone: reading whole assets, requests included, was most of what a settle of
    /// 1,000 small files cost the daemon and the client).
    private func sweep(ofIssues issues: [String]) async throws(LibraryError) -> [String: AssetState] {
        var states: [String: AssetState] = [:]
        for name in issues {
            try await forEachState(ofIssue: name) { id, state in
                states[id] = state
            }
        }
        return states
    }
}

/// The latest state of each followed asset, from events and sweeps, and a wake-up when one
/// changes.
final class SettleTracker: Sendable {
    private struct State {
        var states: [String: AssetState] = [:]
        var waiter: CheckedContinuation<Bool, Never>?
        /// A state changed since the last ``changed(within:)`` returned.
        var changed = false
        /// The assets an event told of since the sweep being read began (`nil`: none is).
        var toldDuringSweep: Set<String>?
    }

    private let issues: Set<String>
    private let includingNetworkWaits: Bool
    private let retryWaitLimit: RetryWaitLimit?
    /// The connection's clock: retry dates are compared with its `now`, quiet is timed on it.
    private let clock: any LibraryClock
    private let state = Mutex(State())

    init(issues: Set<String>, includingNetworkWaits: Bool, retryWaitLimit: RetryWaitLimit?, clock: any LibraryClock) {
        self.issues = issues
        self.includingNetworkWaits = includingNetworkWaits
        self.retryWaitLimit = retryWaitLimit
        self.clock = clock
    }

    /// Records an event's state (of a followed asset).
    func update(_ id: String, ofIssue issue: String, _ new: AssetState) {
        guard issues.contains(issue) else { return }
        let waiter = state.withLock { state in
            state.states[id] = new
            state.changed = true
            state.toldDuringSweep?.insert(id)
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: true)
    }

    /// A sweep begins: the events told from now on are kept over what it reads.
    func beginSweep() {
        state.withLock { $0.toldDuringSweep = [] }
    }

    /// Takes a sweep's states, except for the assets an event told of while it read: a page read
    /// before such an event says less than the event (taking the page made a sync that had
    /// finished wait for ``DaemonBackend/quietBeforeReading`` and a second sweep, 2 s at the end
    /// of every sync of 1,000 small files through a daemon).
    func endSweep(_ swept: [String: AssetState]) {
        state.withLock { state in
            var states = swept
            for id in state.toldDuringSweep ?? [] {
                if let told = state.states[id] { states[id] = told }
            }
            state.states = states
            state.toldDuringSweep = nil
        }
    }

    /// Whether no followed asset is on its way: one waiting for a network counts as settled
    /// unless network waits are waited for; so does one whose retry is due later than the limit
    /// allows, as in process.
    var isSettled: Bool {
        let now = clock.now
        return state.withLock { state in
            state.states.values.allSatisfy { assetState in
                switch assetState {
                case .waiting(.network): !includingNetworkWaits
                case .waiting(.retry(let until, _)): retryWaitLimit?.endsWait(retryDueAt: until, now: now) ?? false
                case .waiting(.queued), .waiting(.hostLimit), .downloading, .finished: false
                default: true
                }
            }
        }
    }

    /// How many followed assets wait for an allowed network.
    var networkWaits: Int {
        state.withLock { $0.states.values.filter { $0 == .waiting(.network) }.count }
    }

    /// Returns `true` when a followed asset changed state (since the previous call, or while
    /// waiting), `false` after `timeout` without a change.
    func changed(within timeout: Duration) async -> Bool {
        let timer = Task { [clock] in
            guard (try? await clock.sleep(for: timeout)) != nil else { return }
            let waiter = state.withLock { state in
                defer { state.waiter = nil }
                return state.waiter
            }
            waiter?.resume(returning: false)
        }
        defer { timer.cancel() }
        return await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            let (previous, now) = state.withLock { state -> (CheckedContinuation<Bool, Never>?, Bool) in
                let previous = state.waiter
                if state.changed {
                    state.changed = false
                    state.waiter = nil
                    return (previous, true)
                }
                state.waiter = continuation
                return (previous, false)
            }
            previous?.resume(returning: false)
            if now { continuation.resume(returning: true) }
        }
    }
}
