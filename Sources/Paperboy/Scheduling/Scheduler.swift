import Foundation
import Logging
import Synchronization

/// Runs transfers under the concurrency limits and retries them; ``Delivery`` hands finished
/// files over.
///
/// The store is the state; memory holds the working set: assets running, waiting on a timer,
/// being delivered or with a delegate attached, and a window of the next in line (at most
/// ``windowSize`` queued assets), refilled from the store's index on (state, priority, seq). An
/// asset at rest (idle, paused, failed, cancelled, delivered, or waiting for an allowed network)
/// with nothing attached leaves memory. The working set's bookkeeping happens under one lock
/// (``State``); the database is written in batches (``LibraryStore/submit(_:)``). Transfers run as
/// tasks; a transport never blocks a thread of the cooperative pool (the contract), and file
/// syncs run on their own queue.
///
/// One job per file: the window and dispatch (`Scheduler+Window`), the app's commands
/// (`+Commands`), network and bandwidth changes (`+Network`), ending a transfer and its retries
/// (`+Finish`), the transfer itself (`+Transfer`), waiting for outcomes (`+Waits`).
final class Scheduler: Sendable {
    /// The global bandwidth limit, shared by every transfer.
    let limiter: BandwidthLimiter
    let background = Mutex<[Task<Void, Never>]>([])

    var maxUserInfoBytes: Int { settings.maxUserInfoBytes }

    let store: LibraryStore
    let layout: LibraryLayout
    let durability: Durability
    let transports: TransportRegistry
    /// The library's configuration as it was opened: each setting is read where it is used.
    let settings: Library.Configuration
    /// Where the network status comes from: ``Library/Configuration/networkMonitor``, or the
    /// default one (``Library/defaultNetworkMonitor()``) when it is `nil`.
    let networkMonitor: any NetworkMonitor
    /// The current boot (``BootIdentity``), recorded with checkpoints; `nil` if unknown.
    let bootID: String?
    /// Whether more bytes may be written under the library: asked by every writer.
    let space: FreeSpaceGuard
    let logger: Logger
    let broadcaster = EventBroadcaster()
    /// Orders the state changes told of one asset (``broadcastState(_:delivered:departed:)``).
    let tellingOrder = StripedLocks()
    let state: Mutex<State>
    /// Whether any asset ever had an event hub (a delegate attached): until then a transfer's
    /// lookups of its hub (each progress report, each end) answer without the lock, which the
    /// transfer thread would otherwise take for nothing, against every other user of it.
    let hubsCreated = Atomic<Bool>(false)
    /// The backend serving this scheduler (see ``backend``).
    let backendReference = Mutex(BackendReference())
    /// The configured clock: retries, timeouts, the limiter and the schedule read it.
    var clock: any LibraryClock { settings.clock }

    /// Why a running transfer is being stopped; `.storage`: its progress cannot be recorded.
    enum StopKind: Sendable { case pause, cancel, remove, network, close, storage }

    init(store: LibraryStore, layout: LibraryLayout, transports: TransportRegistry, settings: Library.Configuration,
         networkMonitor: any NetworkMonitor) {
        self.store = store
        self.layout = layout
        self.transports = transports
        self.settings = settings
        self.networkMonitor = networkMonitor
        bootID = settings.bootIdentity()
        space = FreeSpaceGuard(root: layout.root, floor: settings.minFreeSpace)
        durability = Durability(root: layout.root, enabled: settings.syncsToDisk)
        logger = settings.logger
        limiter = BandwidthLimiter(bytesPerSecond: settings.bandwidthLimit, clock: settings.clock)
        var initial = State(clock: settings.clock)
        initial.network = networkMonitor.current
        initial.perTransferLimit = settings.perTransferBandwidthLimit
        state = Mutex(initial)
        store.onCommitFailure.set { [weak self] error, ids in self?.recordingFailed(error, ids: ids) }
    }

    deinit {
        // The statistics recorder holds no reference while parked: let it see the end.
        state.withLock { $0.statisticsWaiter.take() }?.resume()
    }

    /// The store gave up recording updates of `ids`: nothing of them may go on as if recorded.
    /// A running transfer stops (its bytes stay on disk for the next open) and fails with
    /// `error`, as does a waiting one; a delivery reports its own failure to record.
    func recordingFailed(_ error: LibraryError, ids: [String]) {
        var failed: [(AssetEventHub, LibraryError)] = []
        var departures: [String: State.Departure] = [:]
        state.withLock { state in
            for id in ids {
                guard let entry = state.entries[id], !entry.delivering else { continue }
                let event = AssetLifecycle.Event.recordingFailed(error.withMessage("asset \(id): \(error.message)"))
                // Only those it changes: an update may let an entry at rest go.
                var probe = entry.life
                guard !probe.handle(event).isEmpty else { continue }
                let (followup, departed) = handle(event, for: id, in: &state)
                departures[id] = departed
                if let told = followup.told { failed.append(told) }
            }
            wakeIdleWaiters(&state)
        }
        for (hub, error) in failed { hub.failed(error) }
        for id in ids { broadcastState(id, departed: departures[id]) }
    }

    let scheduleTask = Mutex<Task<Void, Never>?>(nil)

    // MARK: Reading

    struct Snapshot: Sendable {
        var state: AssetState
        var written: Int64
        var expected: Int64?
        var request: AssetRequest
        var attempts: Int
        var failure: LibraryError?
        /// How a split download goes (``AssetStatus/split``).
        var split: SplitProgress?
    }

    /// The live view of an undelivered asset, or `nil` if the scheduler does not hold it.
    func snapshot(_ id: String) -> Snapshot? {
        let found = state.withLock { state -> (Snapshot, LiveProgress)? in
            guard let entry = state.entries[id] else { return nil }
            return (Snapshot(state: liveState(entry, in: state), written: entry.live.written.load(ordering: .relaxed),
                             expected: entry.live.expectedBytes, request: entry.request, attempts: entry.attempts,
                             failure: entry.failure), entry.live)
        }
        guard let (found, live) = found else { return nil }
        // Read outside the scheduler's lock: the transport's figures have a lock of their own.
        var snapshot = found
        snapshot.split = live.splitProgress
        return snapshot
    }

    /// What the app sees of `entry`, held in `state`: a queued asset whose host is at its limit
    /// while other hosts could start waits for that host.
    func liveState(_ entry: Entry, in state: State) -> AssetState {
        if entry.state == .queued, state.hostCounts[entry.host, default: 0] >= settings.maxPerHost,
           state.running < settings.maxConcurrent {
            return .waiting(.hostLimit(host: entry.host))
        }
        return Self.publicState(entry, now: clock.now)
    }

    /// Assets asked for and not yet delivered, oldest first.
    func activeAssets() -> [AssetDownload] {
        let backend = self.backend
        return store.assetIDs(inStates: [.queued, .paused, .retry, .network, .downloading, .finished]).map {
            backend.asset($0.id, issueName: $0.issueName)
        }
    }

    static func publicState(_ entry: Entry, now: @autoclosure () -> Date) -> AssetState {
        publicState(entry.state, retryAt: entry.retryAt, attempts: entry.attempts, detail: entry.detail, now: now())
    }

    /// What the app sees of an asset in `state`; a retry without a readable date is due `now`.
    static func publicState(_ state: PersistedState, retryAt: Date?, attempts: Int, detail: String?,
                            now: @autoclosure () -> Date) -> AssetState {
        switch state {
        case .idle: .idle
        case .queued: .waiting(.queued)
        case .paused: .waiting(.pausedByApp)
        case .retry: .waiting(.retry(until: retryAt ?? now(), attempt: attempts + 1))
        case .network: .waiting(.network)
        case .downloading: .downloading
        case .finished: .finished
        case .delivered: .delivered
        case .failed: .failed(detail ?? "failed")
        case .cancelled: .cancelled
        }
    }

    /// Returns when nothing is queued, running, waiting for a retry or being delivered (and,
    /// if asked, nothing waits for an allowed network); with `retryWaitLimit`, retries due later
    /// than it allows do not count.
    func waitUntilIdle(includingNetworkWaits: Bool = false, retryWaitLimit: RetryWaitLimit? = nil) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let waiter = State.IdleWaiter(includingNetwork: includingNetworkWaits, retryWaitLimit: retryWaitLimit, continuation: continuation)
            let idle = state.withLock { state -> Bool in
                // A backlog is work too (not yet in memory, or its read failed and is retried), and
                // so are the retries waiting in the store.
                if state.isIdle(for: waiter) { return true }
                state.idleWaiters.append(waiter)
                return false
            }
            if idle { continuation.resume() }
        }
    }

    /// Stops every transfer (bytes kept, progress recorded) and writes pending updates.
    func close() async {
        stopBackgroundWork()
        let tasks: [Task<Void, Never>] = state.withLock { state in
            state.closed = true
            state.refillRetry?.cancel()
            state.refillRetry = nil
            state.retryTimer?.task.cancel()
            state.retryTimer = nil
            var tasks: [Task<Void, Never>] = []
            for id in Array(state.entries.keys) {
                state.update(id) { entry in
                    // A pause, a cancel, a network wait asked for before stays what it ends in.
                    if let task = entry.task { tasks.append(task) }
                    _ = handle(.close(running: entry.task != nil), on: &entry)
                }
            }
            return tasks
        }
        for task in tasks { await task.value }
        state.withLock { state in
            for waiter in state.idleWaiters { waiter.continuation.resume() }
            state.idleWaiters = []
            for id in Array(state.assetWaiters.keys) { state.settle(id, .closed) }
            state.entries = [:]
            state.inMemoryByIssue = [:]
        }
        await store.flushAsync()
    }

    func wakeIdleWaiters(_ state: inout State) {
        for continuation in state.takeIdleWaiters() { continuation.resume() }
    }

    /// Tells subscribers where asset `id` is now.
    ///
    /// - Parameter departed: the asset as it left memory with the change told (cancelled,
    ///   failed, paused…), when it did, or as it was recorded when it was never taken into
    ///   memory (added to the store's backlog): told as that, without a read of the store.
    ///
    /// The state is read and sent under the asset's lock of ``tellingOrder``: two threads telling
    /// the same asset (a transfer's end and its delivery, a command and the transfer it started)
    /// send in the order they read, so a state read here is never sent after a later one read
    /// here. The same state may be told twice. Not covered: a `departed` taken by the caller
    /// before this lock, told when the asset is out of memory again by then (it came back and
    /// left meanwhile, on another thread): that needs the caller preempted for a whole transfer.
    func broadcastState(_ id: String, delivered: Bool = false, departed: State.Departure? = nil) {
        guard broadcaster.hasSubscribers else { return }
        tellingOrder.withLock(for: id) { tellState(id, delivered: delivered, departed: departed) }
    }

    private func tellState(_ id: String, delivered: Bool, departed: State.Departure?) {
        // In memory first: a database read here would wait for batched writes on every change.
        var (current, issueName) = state.withLock { state -> (AssetState?, String?) in
            guard let entry = state.entries[id] else { return (delivered ? .delivered : nil, nil) }
            return (delivered ? .delivered : liveState(entry, in: state), entry.issueName)
        }
        if let departed, current == nil || issueName == nil {
            current = current ?? departed.state
            issueName = issueName ?? departed.issueName
        }
        if current == nil || issueName == nil, let record = store.asset(id: id) {
            issueName = record.issueName
            // Waiting for a network or a retry, in the store: still told, as when held in memory.
            if current == nil, let stored = PersistedState(rawValue: record.state), stored == .network || stored == .retry {
                current = Self.publicState(stored, retryAt: record.retryAt, attempts: record.attempts, detail: record.detail,
                                           now: clock.now)
            }
        }
        guard let current, let issueName else { return }
        broadcaster.send(.assetStateChanged(backend.asset(id, issueName: issueName), current))
    }
}
