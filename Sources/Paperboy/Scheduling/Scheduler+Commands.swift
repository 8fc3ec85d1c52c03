import Foundation
import Synchronization

// What the app asks of an asset: download, a new checksum, pause, cancel, remove its issue.
extension Scheduler {
    // MARK: Commands

    /// Starts or reconnects: attaches `delegate` and makes sure the asset is on its way.
    func download(_ asset: AssetDownload, delegate: (any AssetDownloadDelegate)?) {
        let id = asset.identifier
        var followup = Followup()
        // Read outside the lock (a read waits for a batch being written): taken in below unless
        // it came into memory meanwhile, or an entry left memory since (its row may have changed
        // after this read: it is read again, under the lock).
        let before = state.withLock { $0.entries[id] == nil ? $0.evictions : nil }
        let stored = before != nil ? store.asset(id: id) : nil
        state.withLock { state in
            guard !state.closed else { return }
            if state.entries[id] == nil {
                let current = state.evictions == before ? stored : nil
                guard let record = current ?? store.asset(id: id), record.state != PersistedState.delivered.rawValue else { return }
                // Waiting in the store for its retry: the store's timer queues it when due.
                if delegate == nil, record.state == PersistedState.retry.rawValue { return }
                if delegate == nil, queueInStore(record, in: &state) { return }
                take(Entry(record), in: &state)
            }
            state.update(id) { entry in
                if entry.state == .downloading, entry.stop == .cancel, !entry.restartAfterStop {
                    // The cancelled download keeps its delegates; this one starts afresh.
                    entry.cancelledHub = entry.hub
                    entry.hub = nil
                }
                if let delegate {
                    if entry.hub == nil {
                        hubsCreated.store(true, ordering: .releasing)
                        entry.hub = AssetEventHub(asset: asset)
                    }
                    // The transfer resumed before anybody listened: the first delegate hears of it.
                    var resumedAt: (total: Int64, expected: Int64?)?
                    if entry.state == .downloading || entry.state == .finished, entry.hub?.hasDelegates == false {
                        resumedAt = entry.unannouncedResume
                        entry.unannouncedResume = nil
                    }
                    entry.hub!.attach(delegate, resumedAt: resumedAt)
                }
                followup = handle(.download, on: &entry)
            }
            follow(id, &followup, in: &state)
            pump(&state)
        }
        if let start = followup.delivery { delivery.carryOut(start, for: id) }
        broadcastState(id)
    }

    /// Changes the SHA-256 an asset's file must have; a running transfer stops (keeping its
    /// bytes) and starts again under the new one.
    func updateChecksum(_ id: String, sha256: String?) throws(LibraryError) {
        let sha256 = sha256?.lowercased()
        if let sha256, sha256.utf8.count != 64 || !sha256.allSatisfy(\.isHexDigit) {
            throw LibraryError(.invalidRequest, "expected SHA-256 of asset \(id) must be 64 hexadecimal digits, got '\(sha256)'")
        }
        let result: Result<AssetRequest?, LibraryError> = state.withLock { state in
            guard loadEntry(id, in: &state), let entry = state.entries[id] else {
                // Not in memory: delivered (or unknown), and a delivered file is never checked again.
                return store.asset(id: id) == nil
                    ? .failure(LibraryError(.assetNotFound, "no asset \(id) in the library"))
                    : .success(nil)
            }
            var changed: AssetRequest?
            if entry.state == .finished || entry.delivering, entry.request.sha256 != sha256 {
                state.update(id) { _ in }
                return .failure(LibraryError(.invalidRequest, "asset \(id) is already verified and being delivered"))
            }
            state.update(id) { entry in
                guard entry.request.sha256 != sha256 else { return }
                entry.request.sha256 = sha256
                changed = entry.request
                _ = handle(.checksumChanged, on: &entry)
            }
            return .success(changed)
        }
        if let request = try result.get() { try store.updateRequest(id: id, request) }
    }

    /// Pauses: a running transfer stops keeping its bytes; a waiting one stays put.
    func pause(_ id: String) {
        let departed = state.withLock { state -> State.Departure? in
            guard loadEntry(id, in: &state) else { return nil }
            let departed = handle(.pause, for: id, in: &state).departed
            wakeIdleWaiters(&state)
            return departed
        }
        broadcastState(id, departed: departed)
    }

    /// A download asked for while a cancel was stopping the transfer, then given up again: its
    /// delegates join the cancelled ones, and all get what ends the transfer.
    static func mergeCancelledHub(_ entry: inout Entry) {
        guard let cancelled = entry.cancelledHub else { return }
        if let hub = entry.hub { cancelled.adopt(hub) }
        entry.hub = cancelled
        entry.cancelledHub = nil
    }

    /// Cancels: stops the transfer and removes its partial bytes.
    func cancel(_ id: String) {
        // Ended here (not running): told once recorded (see `submitEnd`).
        let (ended, departed) = state.withLock { state -> (Bool, State.Departure?) in
            guard loadEntry(id, in: &state) else { return (false, nil) }
            let (followup, departed) = handle(.cancel, for: id, in: &state)
            wakeIdleWaiters(&state)
            return (followup.end != nil, departed)
        }
        if !ended { broadcastState(id, departed: departed) }
    }

    /// Forgets the assets of an issue: running transfers stop, files are removed by the caller.
    func removeIssue(_ name: String) async {
        let (tasks, ended) = state.withLock { state -> ([Task<Void, Never>], [(AssetEventHub, LibraryError)]) in
            var tasks: [Task<Void, Never>] = []
            // Delegates of assets with no transfer to stop (paused, waiting) hear the end now;
            // those of running transfers when each stops.
            var ended: [(AssetEventHub, LibraryError)] = []
            for id in state.entries.values.filter({ $0.issueName == name }).map(\.id) {
                var followup = Followup()
                state.update(id) { entry in
                    if let task = entry.task { tasks.append(task) }
                    followup = handle(.remove(running: entry.task != nil), on: &entry)
                }
                if let told = followup.told { ended.append(told) }
                follow(id, &followup, in: &state)
            }
            wakeIdleWaiters(&state)
            return (tasks, ended)
        }
        for (hub, error) in ended { hub.failed(error) }
        for task in tasks { await task.value }
    }
}
