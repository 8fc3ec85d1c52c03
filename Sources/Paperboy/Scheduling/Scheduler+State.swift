import Foundation
import Synchronization

// The working set the scheduler holds under its lock: one entry per asset in memory, and the
// counts kept with them.
extension Scheduler {
    struct Entry {
        let id: String
        let issueName: String
        let seq: Int64
        var request: AssetRequest
        /// Its state and what the store records of it, changed only through
        /// ``Scheduler/handle(_:on:)``; the properties below read it.
        var life: AssetLifecycle
        var state: PersistedState { life.state }
        var attempts: Int { life.attempts }
        var progressClock: Duration? { life.progressClock }
        var retryAt: Date? { life.retryAt }
        var detail: String? { life.detail }
        var bytesOnDisk: Int64 { life.bytesOnDisk }
        var expectedBytes: Int64? { life.expectedBytes }
        var validator: ResourceValidator? { life.validator }
        var stop: StopKind? { life.stop }
        var restartAfterStop: Bool { life.restartAfterStop }
        var delivering: Bool { life.delivering }
        var failure: LibraryError? { life.failure }
        var inIssue: Bool { life.inIssue }
        let live = LiveProgress()
        var hub: AssetEventHub?
        var task: Task<Void, Never>?
        var retryTask: Task<Void, Never>?
        /// The delegates of a download cancelled while it was stopping, when a new download was
        /// asked for meanwhile: they get the cancellation, the new ones do not.
        var cancelledHub: AssetEventHub?
        /// This transfer continued from bytes on disk while no delegate was attached: the first
        /// delegate to attach before it is delivered gets `didResumeAt` with these figures.
        var unannouncedResume: (total: Int64, expected: Int64?)?
        /// Its state differs from what the store has queued for it (a `delivered` update the
        /// store could not write): it stays in memory.
        var pinned = false
        /// It failed or was cancelled, and the batch carrying that is not committed yet: the app
        /// hears of the end (waits, delegates, events) once it is (see ``Scheduler/submitEnd(_:telling:)``).
        var recordingEnd = false
        var host: String { request.url.host?.lowercased() ?? "" }

        init(_ record: AssetRecord) {
            id = record.id
            issueName = record.issueName
            seq = record.seq
            request = record.request
            life = AssetLifecycle(record)
            live.written.store(record.bytesKept, ordering: .relaxed)
            live.expected.store(record.expectedBytes ?? -1, ordering: .relaxed)
        }

        var isBusy: Bool {
            delivering || recordingEnd || state == .queued || state == .retry || state == .downloading
        }

        /// Nothing of it needs memory: its row says all (see ``Scheduler``). An asset waiting for
        /// an allowed network waits in the store (read again when the network changes), and so
        /// does one waiting to retry (queued there when its retry is due), unless its retry is
        /// due within ``Scheduler/storedRetryMinimumDelay``: a retry read back from the store
        /// costs a few transactions, too many for backoffs of milliseconds.
        func isAtRest(now: @autoclosure () -> Date) -> Bool {
            switch state {
            case .idle, .paused, .failed, .cancelled, .network: break
            case .retry:
                let now = now()
                guard (retryAt ?? now).timeIntervalSince(now) >= Scheduler.storedRetryMinimumDelay.seconds else { return false }
            default: return false
            }
            return !pinned && !delivering && !recordingEnd && task == nil && retryTask == nil && stop == nil && !restartAfterStop
                && hub == nil && cancelledHub == nil
        }

        var policyOverride: NetworkPolicyOverride? { request.network }
    }

    struct State {
        /// The scheduler's clock (see ``Scheduler/clock``): whether a retry is due soon.
        let clock: any LibraryClock
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
        /// The store may hold assets waiting to retry, not in memory, the earliest due then: a
        /// timer (``retryTimer``) is armed for it while this is set.
        var storedRetryDue: Date?
        var retryTimer: (task: Task<Void, Never>, due: Date)?
        /// The no-progress clocks of the retries let go, given back when they come back.
        var retryClocks: [String: Duration] = [:]
        var idleWaiters: [IdleWaiter] = []
        /// Assets in memory waiting to retry (counted in ``busy`` too).
        var retrying = 0
        var closed = false
        var network = NetworkStatus(kind: .other)
        var perTransferLimit: Int64?
        var perTransferLimiters: [String: BandwidthLimiter] = [:]
        /// Tasks in ``AssetDownload/waitUntilFinished()``, by asset and key; resumed with `nil`
        /// when the waiting task is cancelled.
        var assetWaiters: [String: [Int: CheckedContinuation<AssetOutcome?, Never>]] = [:]
        var nextWaiterKey = 0
        /// The statistics recorder, parked while no transfer runs (see `Scheduler+Statistics`).
        var statisticsWaiter: CheckedContinuation<Void, Never>?

        /// An asset whose entry left memory with an update, as it was then: what
        /// ``Scheduler/broadcastState(_:delivered:departed:)`` tells without reading the store.
        struct Departure {
            var issueName: String
            var state: AssetState
        }

        /// Applies a change to an entry, keeping the counts right, and settles the waits on it
        /// when it failed or was cancelled (a delivery settles them once fully recorded).
        ///
        /// - Returns: the entry's asset as it left memory, when the change put it at rest.
        @discardableResult
        mutating func update(_ id: String, _ change: (inout Entry) -> Void) -> Departure? {
            guard var entry = entries[id] else { return nil }
            count(entry, -1)
            change(&entry)
            count(entry, 1)
            entries[id] = entry
            if !assetWaiters.isEmpty, let outcome = Scheduler.settledOutcome(entry) { settle(id, outcome) }
            if entry.isAtRest(now: clock.now) {
                if entry.state == .network { storedNetworkWaits += 1 }
                if entry.state == .retry {
                    let due = entry.retryAt ?? clock.now
                    storedRetryDue = min(storedRetryDue ?? due, due)
                    if let clock = entry.progressClock { retryClocks[id] = clock }
                }
                remove(id)
                return Departure(issueName: entry.issueName, state: Scheduler.publicState(entry, now: clock.now))
            }
            return nil
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
            var entry = entry
            if let clock = retryClocks.removeValue(forKey: entry.id) { _ = entry.life.handle(.reloaded(progressClock: clock)) }
            count(entry, 1)
            entries[entry.id] = entry
            inMemoryByIssue[entry.issueName, default: 0] += 1
        }

        private mutating func count(_ entry: Entry, _ sign: Int) {
            if entry.isBusy { busy += sign }
            if entry.state == .network { waitingForNetwork += sign }
            if entry.state == .queued { queued += sign }
            if entry.state == .retry { retrying += sign }
        }

        /// Resumes every task waiting for asset `id` with `outcome`.
        mutating func settle(_ id: String, _ outcome: AssetOutcome) {
            guard let waiters = assetWaiters.removeValue(forKey: id) else { return }
            for continuation in waiters.values { continuation.resume(returning: outcome) }
        }

        /// Nothing in memory or in the store is on its way (network waits aside).
        var isIdle: Bool { busy == 0 && (closed || (!backlog && storedRetryDue == nil)) }

        /// A task in ``Scheduler/waitUntilIdle(includingNetworkWaits:retryWaitLimit:)``.
        struct IdleWaiter {
            var includingNetwork: Bool
            var retryWaitLimit: RetryWaitLimit?
            var continuation: CheckedContinuation<Void, Never>
        }

        /// Whether `waiter` waits no more: nothing on its way but what it does not wait for.
        func isIdle(for waiter: IdleWaiter) -> Bool {
            if waiter.includingNetwork, waitingForNetwork + storedNetworkWaits > 0 { return false }
            if isIdle { return true }
            // Only retries left (in memory or in the store), each due later than the limit.
            guard let limit = waiter.retryWaitLimit, !backlog, busy == retrying else { return false }
            let now = clock.now
            if let due = storedRetryDue, !limit.endsWait(retryDueAt: due, now: now) { return false }
            return entries.values.allSatisfy { entry in
                entry.state != .retry || limit.endsWait(retryDueAt: entry.retryAt ?? now, now: now)
            }
        }

        mutating func takeIdleWaiters() -> [CheckedContinuation<Void, Never>] {
            guard !idleWaiters.isEmpty else { return [] }
            var ready: [CheckedContinuation<Void, Never>] = []
            var waiting: [IdleWaiter] = []
            for waiter in idleWaiters {
                if isIdle(for: waiter) { ready.append(waiter.continuation) } else { waiting.append(waiter) }
            }
            idleWaiters = waiting
            return ready
        }
    }
}
