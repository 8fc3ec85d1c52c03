import Foundation
import Paperboy
import Synchronization

extension DaemonBackend {
    package func waitUntilSettled(assets: Set<String>, ofIssues issues: [String], includingNetworkWaits: Bool,
                                  retryWaitLimit: RetryWaitLimit?) async throws(LibraryError) -> Int {
        let tracker = SettleTracker(planned: assets, includingNetworkWaits: includingNetworkWaits, retryWaitLimit: retryWaitLimit)
        let events = self.events()
        let following = Task {
            for await event in events {
                guard case .assetStateChanged(let asset, let state) = event else { continue }
                tracker.update(asset.identifier, state)
            }
        }
        defer { following.cancel() }
        while true {
            // A sweep reads the states after the events seen so far.
            let states = try await sweep(assets: assets, ofIssues: issues)
            tracker.reset(states)
            if tracker.isSettled { return states.values.filter { $0 == .waiting(.network) }.count }
            await tracker.changed(within: .seconds(1))
        }
    }

    /// The state of each of `assets`, read from the issues named `issues` a page at a time.
    private func sweep(assets: Set<String>, ofIssues issues: [String]) async throws(LibraryError) -> [String: AssetState] {
        var states: [String: AssetState] = [:]
        for name in issues {
            try await forEachAsset(ofIssue: name) { asset in
                if assets.contains(asset.id) { states[asset.id] = asset.state.state }
            }
        }
        return states
    }
}

/// The latest state of each followed asset, from events and sweeps, and a wake-up when one
/// changes.
private final class SettleTracker: Sendable {
    private struct State {
        var states: [String: AssetState] = [:]
        var waiter: CheckedContinuation<Void, Never>?
    }

    private let planned: Set<String>
    private let includingNetworkWaits: Bool
    private let retryWaitLimit: RetryWaitLimit?
    private let state = Mutex(State())

    init(planned: Set<String>, includingNetworkWaits: Bool, retryWaitLimit: RetryWaitLimit?) {
        self.planned = planned
        self.includingNetworkWaits = includingNetworkWaits
        self.retryWaitLimit = retryWaitLimit
    }

    /// Records an event's state (of a followed asset).
    func update(_ id: String, _ new: AssetState) {
        guard planned.contains(id) else { return }
        let waiter = state.withLock { state in
            state.states[id] = new
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume()
    }

    /// Takes a sweep's states.
    func reset(_ states: [String: AssetState]) {
        state.withLock { $0.states = states }
    }

    /// Whether no followed asset is on its way: one waiting for a network counts as settled
    /// unless network waits are waited for; so does one whose retry is due later than the limit
    /// allows, as in process.
    var isSettled: Bool {
        let now = Date()
        return state.withLock { state in
            planned.allSatisfy { id in
                switch state.states[id] {
                case .waiting(.network)?: !includingNetworkWaits
                case .waiting(.retry(let until, _))?: retryWaitLimit?.endsWait(retryDueAt: until, now: now) ?? false
                case .waiting(.queued)?, .waiting(.hostLimit)?, .downloading?, .finished?: false
                default: true
                }
            }
        }
    }

    /// Returns when a followed asset changes state, or after `timeout`.
    func changed(within timeout: Duration) async {
        let timer = Task {
            guard (try? await Task.sleep(for: timeout)) != nil else { return }
            let waiter = state.withLock { state in
                defer { state.waiter = nil }
                return state.waiter
            }
            waiter?.resume()
        }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let previous = state.withLock { state in
                defer { state.waiter = continuation }
                return state.waiter
            }
            previous?.resume()
        }
        timer.cancel()
    }
}
