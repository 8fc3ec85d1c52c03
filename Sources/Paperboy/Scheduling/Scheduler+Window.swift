import Foundation
import Synchronization

// The window of the next in line: what is loaded at open, paged in from the store's backlog as
// slots free up, and started.
extension Scheduler {
    // MARK: Loading

    /// The most queued assets held in memory, waiting for a slot, unless more of a higher
    /// priority than those held are asked for.
    static let windowSize = 256

    /// Takes over at open (after the reconciler): what was running continues (or is paused),
    /// what waited for a network is tried again, finished files are loaded (retries wait in the
    /// store for their timer), and the queued assets are paged in by priority as slots free up.
    /// Finished files that deliver themselves are delivered unless `deliverFinished` is false
    /// (then they wait for a download).
    func load(resume: Bool, deliverFinished: Bool = true) throws(LibraryError) {
        for change in AssetLifecycle.changesAtOpen(resume: resume) { try store.changeStates(change) }
        // Retries wait in the store: the timer wakes for the earliest.
        let retryDue = try store.earliestRetry(now: clock.now)
        let records = try store.assets(inStates: [.finished])
        var deliveries: [String] = []
        state.withLock { state in
            for record in records {
                let entry = Entry(record)
                state.insert(entry)
                if entry.state == .finished, entry.request.deliversItself, deliverFinished { deliveries.append(entry.id) }
            }
            state.backlog = true
            state.storedRetryDue = retryDue
            pump(&state)
        }
        for id in deliveries { delivery.start(id) }
    }

    /// Takes newly added assets, written queued: into the window while it has room or when
    /// their priority is above the lowest in it, else left in the store's backlog.
    func enqueue(_ records: [AssetRecord]) {
        state.withLock { state in
            guard !state.closed else { return }
            for record in records {
                if state.queued >= Self.windowSize, record.request.priority <= state.ready.lowestPriority ?? .max {
                    state.backlog = true
                    continue
                }
                let entry = Entry(record)
                state.insert(entry)
                state.ready.push(id: entry.id, seq: entry.seq, priority: entry.request.priority, host: entry.host)
            }
            pump(&state)
        }
        // Each is queued, or already further when taken into memory; those left in the store's
        // backlog are told as recorded, without reading them back.
        for record in records {
            broadcastState(record.id, departed: State.Departure(issueName: record.issueName, state: .waiting(.queued)))
        }
    }

    /// Takes asset `id` into memory from the store if it is not there; `false` if it is not in
    /// the store either, or delivered (a delivered asset never comes back to memory).
    func loadEntry(_ id: String, in state: inout State) -> Bool {
        if state.entries[id] != nil { return true }
        guard let record = store.asset(id: id), record.state != PersistedState.delivered.rawValue else { return false }
        take(Entry(record), in: &state)
        return true
    }

    /// Holds `entry`, read from the store, in memory; a queued one joins the line (held but not
    /// in line, it would never run: the store's backlog leaves out what memory holds).
    func take(_ entry: Entry, in state: inout State) {
        state.insert(entry)
        if entry.state == .queued {
            state.ready.push(id: entry.id, seq: entry.seq, priority: entry.request.priority, host: entry.host)
        }
        if entry.state == .retry, state.entries[entry.id] != nil {
            // Its retry is due soon: timed here (the store's timer leaves what memory holds).
            scheduleRetry(entry.id, at: entry.retryAt ?? clock.now, in: &state)
        }
    }

    /// The number of assets held in memory (for tests: it stays bounded).
    var entriesInMemory: Int { state.withLock { $0.entries.count } }

    // MARK: Dispatch

    func pump(_ state: inout State) {
        guard !state.closed else { return }
        armRetryTimer(&state)
        let maxPerHost = settings.maxPerHost
        // The window may grow past its size when every asset in it waits for a busy host.
        var limit = Self.windowSize
        while state.running < settings.maxConcurrent {
            if state.backlog, state.queued < Self.windowSize / 2 { refill(&state, upTo: Self.windowSize) }
            // No copies of the dictionaries outlive the pop: `start` below changes them, and a
            // copy still alive would make that change copy every entry.
            guard let next = Self.popReady(&state, maxPerHost: maxPerHost) else {
                guard state.backlog, limit < 4 * Self.windowSize else { break }
                limit += Self.windowSize
                refill(&state, upTo: limit)
                continue
            }
            if let entry = state.entries[next.id], !allowsNetwork(entry, state.network) {
                handle(.networkRefused, for: next.id, in: &state)
                continue
            }
            start(next.id, host: next.host, in: &state)
        }
    }

    /// Loads the next queued assets from the store until `limit` are in memory; the backlog is
    /// empty once the store has no more.
    func refill(_ state: inout State, upTo limit: Int) {
        let wanted = limit - state.queued
        guard wanted > 0, state.refillRetry == nil else { return }
        let records: [AssetRecord]
        do {
            records = try store.queuedAssets(limit: wanted, excluding: Set(state.entries.keys))
        } catch {
            // A failed read is no empty store: the backlog stays, and is read again shortly.
            logger.error("\(error.message); reading the queued assets again in \(Self.refillRetryDelay)")
            let clock = self.clock
            state.refillRetry = Task { [weak self] in
                try? await clock.sleep(for: Self.refillRetryDelay)
                guard !Task.isCancelled, let self else { return }
                self.state.withLock { state in
                    state.refillRetry = nil
                    self.pump(&state)
                    self.wakeIdleWaiters(&state)
                }
            }
            return
        }
        for record in records {
            let entry = Entry(record)
            state.insert(entry)
            state.ready.push(id: entry.id, seq: entry.seq, priority: entry.request.priority, host: entry.host)
        }
        if records.count < wanted { state.backlog = false }
    }

    /// Retries due sooner than this keep their timer in memory; later ones wait in the store.
    static let storedRetryMinimumDelay = Duration.seconds(1)

    /// How long after a failed read of the queued assets they are read again.
    static let refillRetryDelay = Duration.seconds(1)

    /// Queues an asset that is not in memory in the store only, when the window is full and the
    /// asset's priority is not above those in it (it is paged in in its turn): `false` when it
    /// must be taken into memory instead.
    func queueInStore(_ record: AssetRecord, in state: inout State) -> Bool {
        guard state.queued >= Self.windowSize, record.request.priority <= state.ready.lowestPriority ?? .max,
              record.requestFailure == nil else { return false }
        var life = AssetLifecycle(record)
        switch life.state {
        case .idle, .failed, .cancelled, .paused:
            // Its record only: it joins the store's backlog, not the line in memory.
            for case .record(let patch) in life.handle(.download) { store.submit(patch) }
            state.backlog = true
            return true
        case .queued, .retry, .network, .downloading, .finished, .delivered:
            // Queued already (in the store's backlog), or held in memory.
            return life.state == .queued
        }
    }

    static func popReady(_ state: inout State, maxPerHost: Int) -> (id: String, host: String)? {
        let counts = state.hostCounts
        let entries = state.entries
        return state.ready.pop(
            hostHasRoom: { counts[$0, default: 0] < maxPerHost },
            isReady: { entries[$0]?.state == .queued && entries[$0]?.task == nil })
    }

    func start(_ id: String, host: String, in state: inout State) {
        state.running += 1
        state.statisticsWaiter.take()?.resume()
        state.hostCounts[host, default: 0] += 1
        var limiters = [limiter]
        if let entry = state.entries[id], let rate = entry.request.maxBytesPerSecond ?? state.perTransferLimit {
            let own = BandwidthLimiter(bytesPerSecond: rate, clock: clock)
            limiters.insert(own, at: 0)
            if entry.request.maxBytesPerSecond == nil { state.perTransferLimiters[id] = own }
        }
        state.update(id) { entry in
            entry.unannouncedResume = nil
            guard handle(.start(uptime: clock.uptime), on: &entry).startTransfer else { return }
            let slot = TransferSlot(host: host)
            let run = Run(
                id: id, issueName: entry.issueName, request: entry.request, bytesOnDisk: entry.bytesOnDisk,
                validator: entry.validator, live: entry.live, hub: entry.hub, limiters: limiters, slot: slot)
            entry.task = Task { [self] in
                // Told from the transfer's own task, before its end is (which the same task
                // tells): read after the lock is given back, a short transfer was often already
                // `finished`, and `downloading` was never told.
                broadcastState(id)
                let outcome = await transfer(run)
                finish(id, slot: slot, outcome: outcome)
            }
        }
    }
}
