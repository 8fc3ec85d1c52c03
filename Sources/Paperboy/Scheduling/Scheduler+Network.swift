import Foundation
import Logging
import Synchronization

// Following the network, the bandwidth schedule and the limiter's statistics: pausing what the
// network no longer allows, and queuing again what it allows now.
extension Scheduler {
    /// Starts the background work of an open library: following the network, the bandwidth
    /// schedule, and recording the limiter's statistics for `paperboy status`.
    func startBackgroundWork() {
        let changes = networkMonitor.changes()
        let clock = self.clock
        var tasks = [Task { [weak self] in
            for await status in changes {
                guard let self else { return }
                self.networkChanged(status)
            }
        }]
        tasks.append(Task { [weak self] in
            var last: Int64 = -1
            while !Task.isCancelled {
                try? await clock.sleep(for: Self.statisticsInterval)
                guard let granted = self?.recordLimiterStatistics(after: last) else { return }
                if granted == last { await Scheduler.untilATransferStarts { [weak self] in self } }
                last = granted
            }
        })
        background.withLock { $0 = tasks }
        setSchedule(settings.bandwidthSchedule)
    }

    /// How often the limiter's statistics are recorded while transfers run.
    static let statisticsInterval = Duration.seconds(1)

    /// Follows a time-of-day schedule (replacing the previous one); `nil` stops following.
    func setSchedule(_ schedule: BandwidthSchedule?) {
        let clock = self.clock
        let task: Task<Void, Never>? = schedule.map { schedule in
            Task { [weak self] in
                while !Task.isCancelled {
                    guard let self else { return }
                    let now = clock.now
                    self.limiter.setBytesPerSecond(schedule.bytesPerSecond(at: now))
                    guard let next = schedule.nextChange(after: now) else { return }
                    // At least 50 ms: a wall clock set back a moment must not make this spin.
                    try? await clock.sleep(for: max(.milliseconds(50), Self.delay(until: next, from: now)))
                }
            }
        }
        scheduleTask.withLock { current in
            current?.cancel()
            current = task
        }
    }


    /// Whether an asset may transfer on `status` (always, for local transports and for sources
    /// that need no network, see ``NetworkPolicy/isLocalSource(_:)``).
    /// The policy is asked first: it allows the common case in a few comparisons, without
    /// parsing the URL's host under the scheduler's lock at each start.
    func allowsNetwork(_ entry: Entry, _ status: NetworkStatus) -> Bool {
        if settings.effectiveNetworkPolicy.applying(entry.policyOverride).allows(status) { return true }
        if NetworkPolicy.isLocalSource(entry.request.url) { return true }
        if let transport = try? transports.transport(for: entry.request.url), transport.capabilities.contains(.local) {
            return true
        }
        return false
    }

    /// Changes the limit of each transfer (running ones included); `nil` for none.
    func setPerTransferLimit(_ bytesPerSecond: Int64?) {
        let running = state.withLock { state -> [BandwidthLimiter] in
            state.perTransferLimit = bytesPerSecond
            return Array(state.perTransferLimiters.values)
        }
        for limiter in running { limiter.setBytesPerSecond(bytesPerSecond) }
    }

    func stopBackgroundWork() {
        for task in background.withLock({ $0 }) { task.cancel() }
        setSchedule(nil)
    }

    /// Re-evaluates every asset against a new network status.
    func networkChanged(_ status: NetworkStatus) {
        logger.info("network is now \(status)")
        var changed: [String] = []
        state.withLock { state in
            state.network = status
            for (id, entry) in state.entries {
                // Only those it changes: an update may let an entry at rest go.
                let event = AssetLifecycle.Event.networkChanged(allowed: allowsNetwork(entry, status))
                var probe = entry.life
                guard !probe.handle(event).isEmpty else { continue }
                handle(event, for: id, in: &state)
                changed.append(id)
            }
            requeueStoredNetworkWaits(&state)
            pump(&state)
            wakeIdleWaiters(&state)
        }
        for id in changed { broadcastState(id) }
    }

    /// Queues again the assets waiting for a network in the store (not in memory), to be paged
    /// in and checked against the new network; those still not allowed go back to waiting.
    func requeueStoredNetworkWaits(_ state: inout State) {
        guard state.storedNetworkWaits > 0 else { return }
        let held = state.entries.values.filter { $0.state == .network }.map(\.id)
        do {
            try store.changeStates(AssetLifecycle.storedNetworkWaitsChecked, except: held)
            state.storedNetworkWaits = 0
            state.backlog = true
        } catch {
            // Left waiting: tried again at the next change of network.
            logger.error("\(error.message)")
        }
    }
}
