import Foundation
import Logging
import Synchronization

/// Runs transfers under the concurrency limits and retries them; ``Delivery`` hands finished
/// files over.
///
/// The store is the state; memory holds the working set: assets running, waiting on a timer,
/// being delivered, with a delegate attached or waiting for a network, and a window of the next
/// in line (at most ``windowSize`` queued assets), refilled from the store's index on (state,
/// priority, seq). An asset at rest (idle, paused, failed, cancelled, delivered) with nothing
/// attached leaves memory. The working set's bookkeeping happens under one lock; the database is
/// written in batches (``LibraryStore/submit(_:)``). Transfers run as tasks; a transport never blocks a thread of
/// the cooperative pool (the contract), and file syncs run on their own queue.
final class Scheduler: Sendable {
    /// The scheduler's knobs; see ``Library/Configuration``.
    struct Settings: Sendable {
        var maxConcurrent: Int
        var maxPerHost: Int
        var retry: RetryPolicy
        var progressInterval: Duration
        var checkpointInterval: Duration
        var connectTimeout: Duration
        var idleTimeout: Duration
        var credentials: (any CredentialProvider)?
        var maxUserInfoBytes: Int
        var unpackLimits = Unpacker.Limits()
        var bandwidthLimit: Int64? = nil
        var perTransferLimit: Int64? = nil
        var schedule: BandwidthSchedule? = nil
        var networkMonitor: any NetworkMonitor = FixedNetworkMonitor(NetworkStatus(kind: .other))
        var networkPolicy: NetworkPolicy = .any
        /// The current boot (``BootIdentity``), recorded with checkpoints; `nil` if unknown.
        var bootID: String? = nil
    }

    /// The global bandwidth limit, shared by every transfer.
    let limiter: BandwidthLimiter
    private let background = Mutex<[Task<Void, Never>]>([])

    var maxUserInfoBytes: Int { settings.maxUserInfoBytes }

    let store: LibraryStore
    let layout: LibraryLayout
    let durability: Durability
    let transports: TransportRegistry
    let settings: Settings
    let logger: Logger
    let broadcaster = EventBroadcaster()
    let state = Mutex<State>(State())

    /// Why a running transfer is being stopped; `.storage`: its progress cannot be recorded.
    enum StopKind: Sendable { case pause, cancel, remove, network, close, storage }

    struct Entry {
        let id: String
        let issueName: String
        let seq: Int64
        var request: AssetRequest
        var state: PersistedState
        /// Failed attempts since the last one that made progress.
        var attempts: Int
        /// When the asset last made progress, or started its first attempt since it was asked
        /// for, resumed or reopened (`nil` until then): the ``RetryPolicy/noProgressTimeout`` clock.
        var progressClock: ContinuousClock.Instant?
        var retryAt: Date?
        var detail: String?
        var bytesOnDisk: Int64
        var expectedBytes: Int64?
        var validator: ResourceValidator?
        let live = LiveProgress()
        var hub: AssetEventHub?
        var task: Task<Void, Never>?
        var retryTask: Task<Void, Never>?
        var stop: StopKind?
        /// Asked for again while a pause or a cancel was stopping it: queue it once the transfer
        /// has ended (from zero after a cancel).
        var restartAfterStop = false
        /// The delegates of a download cancelled while it was stopping, when a new download was
        /// asked for meanwhile: they get the cancellation, the new ones do not.
        var cancelledHub: AssetEventHub?
        var delivering = false
        /// Why the asset failed, while it is `failed`: what ``AssetDownload/waitUntilFinished()`` returns.
        var failure: LibraryError?
        /// This transfer continued from bytes on disk while no delegate was attached: the first
        /// delegate to attach before it is delivered gets `didResumeAt` with these figures.
        var unannouncedResume: (total: Int64, expected: Int64?)?
        /// The finished file went straight to its destination: delivery only records it.
        var inIssue = false
        /// Its state differs from what the store has queued for it (a `delivered` update the
        /// store could not write): it stays in memory.
        var pinned = false
        var host: String { request.url.host?.lowercased() ?? "" }

        init(_ record: AssetRecord) {
            id = record.id
            issueName = record.issueName
            seq = record.seq
            request = record.request
            state = PersistedState(rawValue: record.state) ?? .idle
            attempts = record.attempts
            retryAt = record.retryAt
            detail = record.detail
            bytesOnDisk = record.bytesOnDisk
            expectedBytes = record.expectedBytes
            validator = record.resourceValidator
            live.written.store(record.bytesOnDisk, ordering: .relaxed)
            live.expected.store(record.expectedBytes ?? -1, ordering: .relaxed)
            failure = record.libraryError
        }

        var isBusy: Bool {
            delivering || state == .queued || state == .retry || state == .downloading
        }

        /// Nothing of it needs memory: its row says all (see ``Scheduler``). An asset waiting for
        /// an allowed network waits in the store: it is read again when the network changes.
        var isAtRest: Bool {
            switch state {
            case .idle, .paused, .failed, .cancelled, .network: break
            default: return false
            }
            return !pinned && !delivering && task == nil && retryTask == nil && stop == nil && !restartAfterStop
                && hub == nil && cancelledHub == nil
        }

        var policyOverride: NetworkPolicyOverride? { request.network }
    }

    struct State {
        var entries: [String: Entry] = [:]
        var ready = ReadyQueue()
        var running = 0
        var hostCounts: [String: Int] = [:]
        var busy = 0
        /// Queued assets in memory (the window of the next in line).
        var queued = 0
        /// The store may hold queued assets that are not in memory.
        var backlog = false
        /// A read of the backlog failed: it is read again when this ends.
        var refillRetry: Task<Void, Never>?
        /// Entries let go so far: a row read outside the lock is current only if none was since.
        var evictions = 0
        /// Assets in memory, by issue: a delivery completes its issue when it is the last one.
        var inMemoryByIssue: [String: Int] = [:]
        /// Assets in memory waiting for an allowed network.
        var waitingForNetwork = 0
        /// Assets let go while waiting for an allowed network (their rows say `network`).
        var storedNetworkWaits = 0
        var idleWaiters: [(includingNetwork: Bool, continuation: CheckedContinuation<Void, Never>)] = []
        var closed = false
        var network = NetworkStatus(kind: .other)
        var perTransferLimit: Int64?
        var perTransferLimiters: [String: BandwidthLimiter] = [:]
        /// Tasks in ``AssetDownload/waitUntilFinished()``, by asset and key; resumed with `nil`
        /// when the waiting task is cancelled.
        var assetWaiters: [String: [Int: CheckedContinuation<AssetOutcome?, Never>]] = [:]
        var nextWaiterKey = 0

        /// Applies a change to an entry, keeping the counts right, and settles the waits on it
        /// when it failed or was cancelled (a delivery settles them once fully recorded).
        mutating func update(_ id: String, _ change: (inout Entry) -> Void) {
            guard var entry = entries[id] else { return }
            count(entry, -1)
            change(&entry)
            count(entry, 1)
            if entry.state != .failed { entry.failure = nil }
            entries[id] = entry
            if !assetWaiters.isEmpty, let outcome = Scheduler.settledOutcome(entry) { settle(id, outcome) }
            if entry.isAtRest {
                if entry.state == .network { storedNetworkWaits += 1 }
                remove(id)
            }
        }

        /// Lets an entry go (it is in the store only, or gone).
        mutating func remove(_ id: String) {
            guard let entry = entries.removeValue(forKey: id) else { return }
            evictions &+= 1
            count(entry, -1)
            let left = (inMemoryByIssue[entry.issueName] ?? 1) - 1
            inMemoryByIssue[entry.issueName] = left > 0 ? left : nil
        }

        /// Takes an entry into memory, counted.
        mutating func insert(_ entry: Entry) {
            if entry.state == .network { storedNetworkWaits = max(0, storedNetworkWaits - 1) }
            count(entry, 1)
            entries[entry.id] = entry
            inMemoryByIssue[entry.issueName, default: 0] += 1
        }

        private mutating func count(_ entry: Entry, _ sign: Int) {
            if entry.isBusy { busy += sign }
            if entry.state == .network { waitingForNetwork += sign }
            if entry.state == .queued { queued += sign }
        }

        /// Resumes every task waiting for asset `id` with `outcome`.
        mutating func settle(_ id: String, _ outcome: AssetOutcome) {
            guard let waiters = assetWaiters.removeValue(forKey: id) else { return }
            for continuation in waiters.values { continuation.resume(returning: outcome) }
        }

        mutating func takeIdleWaiters() -> [CheckedContinuation<Void, Never>] {
            guard busy == 0, !backlog else { return [] }
            var ready: [CheckedContinuation<Void, Never>] = []
            idleWaiters.removeAll { waiter in
                guard !waiter.includingNetwork || waitingForNetwork + storedNetworkWaits == 0 else { return false }
                ready.append(waiter.continuation)
                return true
            }
            return ready
        }
    }

    init(store: LibraryStore, layout: LibraryLayout, transports: TransportRegistry, settings: Settings,
         durability: Durability, logger: Logger) {
        self.store = store
        self.layout = layout
        self.transports = transports
        self.settings = settings
        self.durability = durability
        self.logger = logger
        limiter = BandwidthLimiter(bytesPerSecond: settings.bandwidthLimit)
        state.withLock { state in
            state.network = settings.networkMonitor.current
            state.perTransferLimit = settings.perTransferLimit
        }
        store.onCommitFailure.withLock { handler in
            handler = { [weak self] error, ids in self?.recordingFailed(error, ids: ids) }
        }
    }

    /// The store gave up recording updates of `ids`: nothing of them may go on as if recorded.
    /// A running transfer stops (its bytes stay on disk for the next open) and fails with
    /// `error`, as does a waiting one; a delivery reports its own failure to record.
    func recordingFailed(_ error: LibraryError, ids: [String]) {
        var failed: [(AssetEventHub, LibraryError)] = []
        state.withLock { state in
            for id in ids {
                guard let entry = state.entries[id], !entry.delivering else { continue }
                let failure = LibraryError(.storage, "asset \(id): \(error.message)", underlying: error.underlying)
                switch entry.state {
                case .downloading:
                    state.update(id) { entry in
                        entry.stop = .storage
                        entry.restartAfterStop = false
                        entry.detail = failure.message
                        entry.task?.cancel()
                    }
                case .queued, .retry, .network:
                    state.update(id) { entry in
                        entry.retryTask?.cancel()
                        entry.retryTask = nil
                        entry.state = .failed
                        entry.failure = failure
                        entry.detail = failure.message
                        if let hub = entry.hub { failed.append((hub, failure)) }
                        entry.hub = nil
                    }
                    var patch = AssetPatch(id: id)
                    patch.fail(failure)
                    store.submit(patch)
                default:
                    break
                }
            }
            wakeIdleWaiters(&state)
        }
        for (hub, error) in failed { hub.failed(error) }
        for id in ids { broadcastState(id) }
    }

    /// Starts the background work of an open library: following the network, the bandwidth
    /// schedule, and recording the limiter's statistics for `paperboy status`.
    func startBackgroundWork() {
        let changes = settings.networkMonitor.changes()
        var tasks = [Task { [weak self] in
            for await status in changes {
                guard let self else { return }
                self.networkChanged(status)
            }
        }]
        tasks.append(Task { [weak self] in
            var last: Int64 = -1
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(1))
                guard let self else { return }
                let statistics = self.limiter.statistics
                if statistics.bytesGranted != last {
                    last = statistics.bytesGranted
                    self.recordLimiterStatistics(statistics)
                }
            }
        })
        background.withLock { $0 = tasks }
        setSchedule(settings.schedule)
    }

    /// Follows a time-of-day schedule (replacing the previous one); `nil` stops following.
    func setSchedule(_ schedule: BandwidthSchedule?) {
        let task: Task<Void, Never>? = schedule.map { schedule in
            Task { [weak self] in
                while !Task.isCancelled {
                    guard let self else { return }
                    let now = Date()
                    self.limiter.setBytesPerSecond(schedule.bytesPerSecond(at: now))
                    guard let next = schedule.nextChange(after: now) else { return }
                    try? await Task.sleep(for: .milliseconds(Int64(max(0.05, next.timeIntervalSinceNow) * 1000)))
                }
            }
        }
        scheduleTask.withLock { current in
            current?.cancel()
            current = task
        }
    }

    private let scheduleTask = Mutex<Task<Void, Never>?>(nil)

    /// Whether an asset may transfer on `status` (always, for local transports and for sources
    /// that need no network, see ``NetworkPolicy/isLocalSource(_:)``).
    private func allowsNetwork(_ entry: Entry, _ status: NetworkStatus) -> Bool {
        if NetworkPolicy.isLocalSource(entry.request.url) { return true }
        if let transport = try? transports.transport(for: entry.request.url), transport.capabilities.contains(.local) {
            return true
        }
        return settings.networkPolicy.applying(entry.policyOverride).allows(status)
    }

    /// Changes the limit of each transfer (running ones included); `nil` for none.
    func setPerTransferLimit(_ bytesPerSecond: Int64?) {
        let running = state.withLock { state -> [BandwidthLimiter] in
            state.perTransferLimit = bytesPerSecond
            return Array(state.perTransferLimiters.values)
        }
        for limiter in running { limiter.setBytesPerSecond(bytesPerSecond) }
    }

    private func recordLimiterStatistics(_ statistics: BandwidthLimiter.Statistics) {
        guard let data = try? JSONEncoder().encode(statistics) else { return }
        try? store.setMeta("bandwidth", String(decoding: data, as: UTF8.self))
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
                let allowed = allowsNetwork(entry, status)
                if entry.state == .downloading, !allowed, entry.stop == nil {
                    state.update(id) { entry in
                        entry.stop = .network
                        entry.task?.cancel()
                    }
                    changed.append(id)
                } else if entry.state == .network, allowed {
                    state.update(id) { $0.state = .queued }
                    state.ready.push(id: id, seq: entry.seq, priority: entry.request.priority, host: entry.host)
                    var patch = AssetPatch(id: id)
                    patch.state = .queued
                    store.submit(patch)
                    changed.append(id)
                }
            }
            requeueStoredNetworkWaits(&state)
            pump(&state)
            wakeIdleWaiters(&state)
        }
        for id in changed { broadcastState(id) }
    }

    /// Queues again the assets waiting for a network in the store (not in memory), to be paged
    /// in and checked against the new network; those still not allowed go back to waiting.
    private func requeueStoredNetworkWaits(_ state: inout State) {
        guard state.storedNetworkWaits > 0 else { return }
        let held = state.entries.values.filter { $0.state == .network }.map(\.id)
        do {
            try store.changeStates(from: [.network], to: .queued, except: held)
            state.storedNetworkWaits = 0
            state.backlog = true
        } catch {
            // Left waiting: tried again at the next change of network.
            logger.error("\(error.message)")
        }
    }

    // MARK: Loading

    /// The most queued assets held in memory, waiting for a slot, unless more of a higher
    /// priority than those held are asked for.
    static let windowSize = 256

    /// Takes over at open (after the reconciler): what was running continues (or is paused),
    /// what waited for a network is tried again, retries and finished files are loaded, and the
    /// queued assets are paged in by priority as slots free up.
    func load(resume: Bool) throws(LibraryError) {
        try store.changeStates(from: [.network] + (resume ? [.downloading] : []), to: .queued)
        if !resume { try store.changeStates(from: [.downloading], to: .paused) }
        let records = try store.assets(inStates: [.retry, .finished])
        var deliveries: [String] = []
        state.withLock { state in
            for record in records {
                let entry = Entry(record)
                state.insert(entry)
                switch entry.state {
                case .retry:
                    scheduleRetry(entry.id, at: entry.retryAt ?? Date(), in: &state)
                case .finished where entry.request.deliversItself:
                    deliveries.append(entry.id)
                default:
                    break
                }
            }
            state.backlog = true
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
        for record in records { broadcastState(record.id) }
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
    private func take(_ entry: Entry, in state: inout State) {
        state.insert(entry)
        if entry.state == .queued {
            state.ready.push(id: entry.id, seq: entry.seq, priority: entry.request.priority, host: entry.host)
        }
    }

    /// The number of assets held in memory (for tests: it stays bounded).
    var entriesInMemory: Int { state.withLock { $0.entries.count } }

    // MARK: Reading

    struct Snapshot: Sendable {
        var state: AssetState
        var written: Int64
        var expected: Int64?
        var request: AssetRequest
    }

    /// The live view of an undelivered asset, or `nil` if the scheduler does not hold it.
    func snapshot(_ id: String) -> Snapshot? {
        state.withLock { state in
            guard let entry = state.entries[id] else { return nil }
            var public_ = Self.publicState(entry)
            if entry.state == .queued, state.hostCounts[entry.host, default: 0] >= settings.maxPerHost,
               state.running < settings.maxConcurrent {
                public_ = .waiting(.hostLimit(host: entry.host))
            }
            return Snapshot(state: public_, written: entry.live.written.load(ordering: .relaxed),
                            expected: entry.live.expectedBytes, request: entry.request)
        }
    }

    /// Assets asked for and not yet delivered, oldest first.
    func activeAssets() -> [AssetDownload] {
        store.assetIDs(inStates: [.queued, .paused, .retry, .network, .downloading, .finished]).map {
            AssetDownload(identifier: $0.id, issueName: $0.issueName, scheduler: self)
        }
    }

    static func publicState(_ entry: Entry) -> AssetState {
        publicState(entry.state, retryAt: entry.retryAt, attempts: entry.attempts, detail: entry.detail)
    }

    static func publicState(_ state: PersistedState, retryAt: Date?, attempts: Int, detail: String?) -> AssetState {
        switch state {
        case .idle: .idle
        case .queued: .waiting(.queued)
        case .paused: .waiting(.pausedByApp)
        case .retry: .waiting(.retry(until: retryAt ?? Date(), attempt: attempts + 1))
        case .network: .waiting(.network)
        case .downloading: .downloading
        case .finished: .finished
        case .delivered: .delivered
        case .failed: .failed(detail ?? "failed")
        case .cancelled: .cancelled
        }
    }

    // MARK: Commands

    /// Starts or reconnects: attaches `delegate` and makes sure the asset is on its way.
    func download(_ asset: AssetDownload, delegate: (any AssetDownloadDelegate)?) {
        let id = asset.identifier
        var deliver = false
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
                if delegate == nil, queueInStore(record, in: &state) { return }
                take(Entry(record), in: &state)
            }
            var enqueue: (seq: Int64, priority: Int, host: String)?
            state.update(id) { entry in
                if entry.state == .downloading, entry.stop == .cancel, !entry.restartAfterStop {
                    // The cancelled download keeps its delegates; this one starts afresh.
                    entry.cancelledHub = entry.hub
                    entry.hub = nil
                }
                if let delegate {
                    if entry.hub == nil { entry.hub = AssetEventHub(asset: asset) }
                    // The transfer resumed before anybody listened: the first delegate hears of it.
                    var resumedAt: (total: Int64, expected: Int64?)?
                    if entry.state == .downloading || entry.state == .finished, entry.hub?.hasDelegates == false {
                        resumedAt = entry.unannouncedResume
                        entry.unannouncedResume = nil
                    }
                    entry.hub!.attach(delegate, resumedAt: resumedAt)
                }
                switch entry.state {
                case .idle, .failed, .cancelled, .paused:
                    if entry.state != .paused { entry.attempts = 0 }
                    entry.progressClock = nil
                    entry.state = .queued
                    entry.detail = nil
                    entry.stop = nil
                    enqueue = (entry.seq, entry.request.priority, entry.host)
                    var patch = AssetPatch(id: id)
                    patch.state = .queued
                    patch.detail = .some(nil)
                    patch.attempts = entry.attempts
                    store.submit(patch)
                case .finished:
                    deliver = !entry.delivering
                case .downloading where entry.stop == .pause || entry.stop == .cancel:
                    entry.restartAfterStop = true
                case .queued, .retry, .downloading, .delivered, .network:
                    break
                }
            }
            if let enqueue {
                state.ready.push(id: id, seq: enqueue.seq, priority: enqueue.priority, host: enqueue.host)
            }
            pump(&state)
        }
        if deliver { delivery.start(id) }
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
                if entry.state == .downloading, entry.stop == nil {
                    entry.stop = .pause
                    entry.restartAfterStop = true
                    entry.task?.cancel()
                }
            }
            return .success(changed)
        }
        if let request = try result.get() { try store.updateRequest(id: id, request) }
    }

    /// Pauses: a running transfer stops keeping its bytes; a waiting one stays put.
    func pause(_ id: String) {
        state.withLock { state in
            guard loadEntry(id, in: &state) else { return }
            state.update(id) { entry in
                switch entry.state {
                case .downloading:
                    // The last word wins over a download asked for while stopping; a pending
                    // cancel stays a cancel (its bytes are already given up).
                    entry.restartAfterStop = false
                    if entry.stop != .cancel { entry.stop = .pause }
                    Self.mergeCancelledHub(&entry)
                    entry.task?.cancel()
                case .queued, .retry, .idle, .network:
                    entry.retryTask?.cancel()
                    entry.retryTask = nil
                    entry.state = .paused
                    var patch = AssetPatch(id: id)
                    patch.state = .paused
                    store.submit(patch)
                default:
                    break
                }
            }
            wakeIdleWaiters(&state)
        }
        broadcastState(id)
    }

    /// A download asked for while a cancel was stopping the transfer, then given up again: its
    /// delegates join the cancelled ones, and all get what ends the transfer.
    private static func mergeCancelledHub(_ entry: inout Entry) {
        guard let cancelled = entry.cancelledHub else { return }
        if let hub = entry.hub { cancelled.adopt(hub) }
        entry.hub = cancelled
        entry.cancelledHub = nil
    }

    /// Cancels: stops the transfer and removes its partial bytes.
    func cancel(_ id: String) {
        let failedHub: AssetEventHub? = state.withLock { state in
            var hub: AssetEventHub?
            guard loadEntry(id, in: &state) else { return nil }
            state.update(id) { entry in
                switch entry.state {
                case .downloading:
                    entry.stop = .cancel
                    entry.restartAfterStop = false
                    Self.mergeCancelledHub(&entry)
                    entry.task?.cancel()
                case .queued, .retry, .idle, .paused, .failed, .network:
                    entry.retryTask?.cancel()
                    entry.retryTask = nil
                    entry.state = .cancelled
                    entry.bytesOnDisk = 0
                    entry.live.written.store(0, ordering: .relaxed)
                    hub = entry.hub
                    entry.hub = nil
                    POSIX.remove(layout.partialURL(asset: id))
                    store.submit(Self.cancelledPatch(id))
                default:
                    break
                }
            }
            wakeIdleWaiters(&state)
            return hub
        }
        failedHub?.failed(LibraryError(.cancelled, "download of asset \(id) was cancelled"))
        broadcastState(id)
    }

    /// Forgets the assets of an issue: running transfers stop, files are removed by the caller.
    func removeIssue(_ name: String) async {
        let tasks: [Task<Void, Never>] = state.withLock { state in
            var tasks: [Task<Void, Never>] = []
            for id in state.entries.values.filter({ $0.issueName == name }).map(\.id) {
                state.update(id) { entry in
                    entry.retryTask?.cancel()
                    if let task = entry.task {
                        entry.stop = .remove
                        task.cancel()
                        tasks.append(task)
                    }
                }
                if state.entries[id]?.task == nil {
                    state.update(id) { $0.state = .cancelled; $0.delivering = false }
                    state.remove(id)
                }
            }
            wakeIdleWaiters(&state)
            return tasks
        }
        for task in tasks { await task.value }
    }

    /// Returns when nothing is queued, running, waiting for a retry or being delivered (and,
    /// if asked, nothing waits for an allowed network).
    func waitUntilIdle(includingNetworkWaits: Bool = false) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let idle = state.withLock { state -> Bool in
                // A backlog is work too (not yet in memory, or its read failed and is retried).
                if state.busy == 0, !state.backlog || state.closed,
                   !includingNetworkWaits || state.waitingForNetwork + state.storedNetworkWaits == 0 { return true }
                state.idleWaiters.append((includingNetworkWaits, continuation))
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
            var tasks: [Task<Void, Never>] = []
            for id in Array(state.entries.keys) {
                state.update(id) { entry in
                    entry.retryTask?.cancel()
                    if let task = entry.task {
                        entry.stop = .close
                        task.cancel()
                        tasks.append(task)
                    }
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

    // MARK: Dispatch

    private func pump(_ state: inout State) {
        guard !state.closed else { return }
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
                state.update(next.id) { $0.state = .network }
                var patch = AssetPatch(id: next.id)
                patch.state = .network
                store.submit(patch)
                continue
            }
            start(next.id, host: next.host, in: &state)
        }
    }

    /// Loads the next queued assets from the store until `limit` are in memory; the backlog is
    /// empty once the store has no more.
    private func refill(_ state: inout State, upTo limit: Int) {
        let wanted = limit - state.queued
        guard wanted > 0, state.refillRetry == nil else { return }
        let records: [AssetRecord]
        do {
            records = try store.queuedAssets(limit: wanted, excluding: Set(state.entries.keys))
        } catch {
            // A failed read is no empty store: the backlog stays, and is read again shortly.
            logger.error("\(error.message); reading the queued assets again in \(Self.refillRetryDelay)")
            state.refillRetry = Task { [weak self] in
                try? await Task.sleep(for: Self.refillRetryDelay)
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

    /// How long after a failed read of the queued assets they are read again.
    static let refillRetryDelay = Duration.seconds(1)

    /// Queues an asset that is not in memory in the store only, when the window is full and the
    /// asset's priority is not above those in it (it is paged in in its turn): `false` when it
    /// must be taken into memory instead.
    private func queueInStore(_ record: AssetRecord, in state: inout State) -> Bool {
        guard state.queued >= Self.windowSize, record.request.priority <= state.ready.lowestPriority ?? .max,
              record.requestFailure == nil else { return false }
        let stored = PersistedState(rawValue: record.state) ?? .idle
        switch stored {
        case .idle, .failed, .cancelled, .paused:
            var patch = AssetPatch(id: record.id)
            patch.state = .queued
            patch.detail = .some(nil)
            patch.attempts = stored == .paused ? record.attempts : 0
            store.submit(patch)
            state.backlog = true
            return true
        case .queued, .retry, .network, .downloading, .finished, .delivered:
            // Queued already (in the store's backlog), or held in memory.
            return stored == .queued
        }
    }

    private static func popReady(_ state: inout State, maxPerHost: Int) -> (id: String, host: String)? {
        let counts = state.hostCounts
        let entries = state.entries
        return state.ready.pop(
            hostHasRoom: { counts[$0, default: 0] < maxPerHost },
            isReady: { entries[$0]?.state == .queued && entries[$0]?.task == nil })
    }

    private func start(_ id: String, host: String, in state: inout State) {
        state.running += 1
        state.hostCounts[host, default: 0] += 1
        var limiters = [limiter]
        if let entry = state.entries[id], let rate = entry.request.maxBytesPerSecond ?? state.perTransferLimit {
            let own = BandwidthLimiter(bytesPerSecond: rate)
            limiters.insert(own, at: 0)
            if entry.request.maxBytesPerSecond == nil { state.perTransferLimiters[id] = own }
        }
        state.update(id) { entry in
            entry.state = .downloading
            entry.stop = nil
            entry.unannouncedResume = nil
            if entry.progressClock == nil { entry.progressClock = .now }
            let slot = TransferSlot(host: host)
            let run = Run(
                id: id, issueName: entry.issueName, request: entry.request, bytesOnDisk: entry.bytesOnDisk,
                validator: entry.validator, live: entry.live, hub: entry.hub, limiters: limiters, slot: slot)
            entry.task = Task { [self] in
                let outcome = await transfer(run)
                finish(id, slot: slot, outcome: outcome)
            }
        }
        var patch = AssetPatch(id: id)
        patch.state = .downloading
        store.submit(patch)
    }

    private func scheduleRetry(_ id: String, at date: Date, in state: inout State) {
        // A stored date may be years away (a damaged row): a day at most, so the sleep's
        // nanoseconds cannot overflow.
        let delay = min(max(0, date.timeIntervalSinceNow), 86_400)
        state.update(id) { entry in
            entry.retryTask?.cancel()
            entry.retryTask = Task { [self] in
                do {
                    try await Task.sleep(for: .milliseconds(Int64(delay * 1000)))
                } catch {
                    return
                }
                retryDue(id)
            }
        }
    }

    private func retryDue(_ id: String) {
        state.withLock { state in
            guard let entry = state.entries[id], entry.state == .retry else { return }
            state.update(id) { entry in
                entry.state = .queued
                entry.retryTask = nil
            }
            state.ready.push(id: id, seq: entry.seq, priority: entry.request.priority, host: entry.host)
            var patch = AssetPatch(id: id)
            patch.state = .queued
            store.submit(patch)
            pump(&state)
        }
        broadcastState(id)
    }

    func wakeIdleWaiters(_ state: inout State) {
        for continuation in state.takeIdleWaiters() { continuation.resume() }
    }

    // MARK: Ending a transfer

    /// Gives a transfer's place back and starts the next transfer that can use it.
    func releaseSlot(_ slot: TransferSlot) {
        guard slot.take() else { return }
        state.withLock { state in
            Self.release(slot.host, in: &state)
            pump(&state)
        }
    }

    private static func release(_ host: String, in state: inout State) {
        state.running -= 1
        state.hostCounts[host, default: 1] -= 1
        if state.hostCounts[host] == 0 { state.hostCounts[host] = nil }
    }

    private func finish(_ id: String, slot: TransferSlot, outcome: Outcome) {
        let host = slot.host
        let holdsSlot = slot.take()
        var deliver = false
        var deliverNow: (request: AssetRequest, issueName: String)?
        var failure: (AssetEventHub, LibraryError)?
        var requeue: (seq: Int64, priority: Int, host: String)?
        state.withLock { state in
            if holdsSlot { Self.release(host, in: &state) }
            state.perTransferLimiters[id] = nil
            guard let current = state.entries[id] else {
                pump(&state)
                wakeIdleWaiters(&state)
                return
            }
            if current.stop == .remove {
                state.update(id) { $0.state = .cancelled; $0.task = nil }
                state.remove(id)
                pump(&state)
                wakeIdleWaiters(&state)
                return
            }
            state.update(id) { entry in
                entry.task = nil
                var outcome = outcome
                if case .failed(_, _, let written, let validator) = outcome, [.pause, .cancel, .storage].contains(entry.stop) {
                    // Asked to pause or cancel while it failed: that is what the app wants now.
                    outcome = .stopped(written: written, validator: validator)
                }
                if case .stopped = outcome {} else {
                    // A pause or cancel came too late: the transfer ended on its own, for the
                    // delegates of before and after it alike.
                    if let old = entry.cancelledHub {
                        if let hub = entry.hub { hub.adopt(old) } else { entry.hub = old }
                        entry.cancelledHub = nil
                    }
                    entry.stop = nil
                    entry.restartAfterStop = false
                }
                var patch = AssetPatch(id: id)
                switch outcome {
                case .finished(let size, let validator, let inIssue):
                    entry.inIssue = inIssue
                    entry.state = .finished
                    entry.bytesOnDisk = size
                    entry.expectedBytes = size
                    entry.validator = validator
                    entry.live.expected.store(size, ordering: .relaxed)
                    patch.state = .finished
                    patch.bytesOnDisk = size
                    patch.expectedBytes = .some(size)
                    patch.detail = .some(nil)
                    deliver = entry.request.deliversItself || entry.hub?.hasDelegates == true
                    // Marked here, under the same lock, so that the library never looks idle
                    // between the end of the transfer and the delivery.
                    entry.delivering = deliver
                    if deliver, inIssue, entry.hub?.hasDelegates != true {
                        deliverNow = (entry.request, entry.issueName)
                    }
                case .stopped(let written, let validator):
                    // A pause, a network wait or closing is no failure to make progress.
                    entry.progressClock = nil
                    entry.bytesOnDisk = written
                    entry.validator = validator
                    if entry.stop == .cancel {
                        entry.state = .cancelled
                        entry.bytesOnDisk = 0
                        entry.validator = nil
                        entry.live.written.store(0, ordering: .relaxed)
                        POSIX.remove(layout.partialURL(asset: id))
                        patch = Self.cancelledPatch(id)
                        let cancelled = entry.restartAfterStop ? entry.cancelledHub : entry.hub
                        if let cancelled {
                            failure = (cancelled, LibraryError(.cancelled, "download of asset \(id) was cancelled"))
                        }
                        if entry.restartAfterStop {
                            // Asked for again meanwhile: from zero, for the new delegates.
                            entry.state = .queued
                            entry.attempts = 0
                            patch.state = .queued
                            patch.attempts = 0
                            requeue = (entry.seq, entry.request.priority, entry.host)
                        } else {
                            entry.hub = nil
                        }
                        entry.cancelledHub = nil
                    } else if entry.stop == .storage {
                        // Its progress cannot be recorded: failed, with what the store said.
                        let message = entry.detail ?? "asset \(id): its progress cannot be recorded"
                        entry.state = .failed
                        entry.failure = LibraryError(.storage, message)
                        patch.fail(LibraryError(.storage, message))
                        if let hub = entry.hub {
                            failure = (hub, LibraryError(.storage, message))
                            entry.hub = nil
                        }
                    } else if entry.stop == .network {
                        entry.state = .network
                        patch.state = .network
                    } else if entry.stop == .close {
                        // Stopped by closing the library: it continues at the next open.
                        entry.state = .queued
                        patch.state = .queued
                    } else if entry.restartAfterStop {
                        entry.state = .queued
                        patch.state = .queued
                        requeue = (entry.seq, entry.request.priority, entry.host)
                    } else {
                        entry.state = .paused
                        patch.state = .paused
                    }
                    entry.stop = nil
                    entry.restartAfterStop = false
                case .failed(let error, let retryAfter, let written, let validator):
                    let now = ContinuousClock.now
                    // Progress is what the next attempt will not fetch again: the durable offset.
                    let progressed = written > entry.bytesOnDisk
                    if progressed {
                        entry.attempts = 0
                        entry.progressClock = now
                    } else {
                        entry.attempts += 1
                    }
                    entry.bytesOnDisk = written
                    entry.live.written.store(written, ordering: .relaxed)
                    entry.validator = validator
                    patch.attempts = entry.attempts
                    entry.detail = error.message
                    patch.detail = .some(error.message)
                    let retry = settings.retry
                    let delay = retry.delay(afterFailedAttempts: entry.attempts, retryAfter: retryAfter)
                    let stalled = entry.progressClock.map { now - $0 } ?? .zero
                    let outOfTime = retry.noProgressTimeout.map { stalled + delay > $0 } ?? false
                    if error.isRetryable && entry.attempts < retry.maxAttempts && !outOfTime {
                        let date = Date().addingTimeInterval(delay.seconds)
                        entry.state = .retry
                        entry.retryAt = date
                        patch.state = .retry
                        patch.retryAt = .some(date)
                        let kept = progressed ? " after progress to \(written) bytes" : ""
                        logger.info("asset \(id): \(error.message)\(kept); retry \(entry.attempts + 1) of \(retry.maxAttempts) without progress in \(String(format: "%.1f", delay.seconds)) s")
                    } else {
                        entry.state = .failed
                        patch.state = .failed
                        if error.isRetryable {
                            let reason = outOfTime
                                ? "gave up: no progress within the \(String(format: "%g", retry.noProgressTimeout?.seconds ?? 0)) s no-progress timeout"
                                : "gave up after \(entry.attempts) attempts without progress"
                            entry.detail = "\(error.message) (\(reason))"
                            patch.detail = .some(entry.detail)
                        }
                        let final = LibraryError(error.code, entry.detail ?? error.message, isRetryable: error.isRetryable, underlying: error.underlying)
                        entry.failure = final
                        patch.fail(final)
                        if let hub = entry.hub {
                            failure = (hub, final)
                            entry.hub = nil
                        }
                    }
                }
                store.submit(patch)
            }
            if let entry = state.entries[id], entry.state == .retry {
                scheduleRetry(id, at: entry.retryAt ?? Date(), in: &state)
            }
            if let requeue {
                state.ready.push(id: id, seq: requeue.seq, priority: requeue.priority, host: requeue.host)
            }
            pump(&state)
            wakeIdleWaiters(&state)
        }
        if let (hub, error) = failure { hub.failed(error) }
        broadcastState(id)
        if let deliverNow {
            // Already in place and nobody to hand it to: recorded here, without another task.
            // A delegate attached since the check above gets the full delivery instead.
            if !delivery.complete(id, request: deliverNow.request, issueName: deliverNow.issueName, failure: nil,
                                 unlessDelegated: true) {
                Task { [self] in await delivery.deliver(id) }
            }
        } else if deliver {
            Task { [self] in await delivery.deliver(id) }
        }
    }

    private static func cancelledPatch(_ id: String) -> AssetPatch {
        var patch = AssetPatch(id: id)
        patch.state = .cancelled
        patch.bytesOnDisk = 0
        patch.validator = .some(nil)
        return patch
    }

    func broadcastState(_ id: String, delivered: Bool = false) {
        guard broadcaster.hasSubscribers else { return }
        let current: AssetState? = delivered ? .delivered : snapshot(id)?.state
        // In memory first: a database read here would wait for batched writes on every change.
        guard let current, let issueName = state.withLock({ $0.entries[id]?.issueName }) ?? store.asset(id: id)?.issueName else { return }
        broadcaster.send(.assetStateChanged(AssetDownload(identifier: id, issueName: issueName, scheduler: self), current))
    }
}
