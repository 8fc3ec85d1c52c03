import Foundation
import Logging

// Carrying out what an asset's lifecycle asks for: the one way an entry's state changes.
extension Scheduler {
    /// What is left of a lifecycle's actions once the entry's update is done: some under the lock
    /// (``follow(_:_:in:)``), the rest by the caller after it (delegates, deliveries).
    struct Followup {
        var enqueue = false
        var retry: (at: Date, now: Date)?
        /// The patch that ends the asset, to write before the app hears of the end.
        var end: AssetPatch?
        /// The patch of a delivery, written by ``Delivery``.
        var delivered: AssetPatch?
        /// Delegates to tell of the end, and what ended it: after the lock, or (with ``end``) once
        /// the end is written.
        var told: (AssetEventHub, LibraryError)?
        var delivery: Delivery.Start?
        var startTransfer = false
        var forget = false
        /// The lifecycle asked for anything at all.
        var acted = false
    }

    /// Hands `event` to `entry`'s lifecycle and carries out what concerns the entry itself (the
    /// record, the transfer task, the retry timer, the partial file, the live figures, the
    /// delegates); the rest is in the answer. Called inside ``State/update(_:_:)``.
    func handle(_ event: AssetLifecycle.Event, on entry: inout Entry) -> Followup {
        var followup = Followup()
        for action in entry.life.handle(event) {
            followup.acted = true
            switch action {
            case .record(let patch):
                store.submit(patch)
            case .recordEnd(let patch):
                // Busy until the batch carrying it is written (see `submitEnd`).
                entry.recordingEnd = true
                followup.end = patch
            case .recordDelivery(let patch):
                followup.delivered = patch
            case .enqueue:
                followup.enqueue = true
            case .startTransfer:
                followup.startTransfer = true
            case .stopTransfer:
                entry.task?.cancel()
            case .cancelRetry:
                entry.retryTask?.cancel()
                entry.retryTask = nil
            case .scheduleRetry(let date, let now):
                followup.retry = (date, now)
            case .removePartial:
                POSIX.remove(layout.partialURL(asset: entry.id))
            case .showBytes(let written, let expected):
                if let written { entry.live.written.store(written, ordering: .relaxed) }
                if let expected { entry.live.expected.store(expected, ordering: .relaxed) }
            case .startDelivery:
                followup.delivery = .start
            case .deliver(let inPlace):
                followup.delivery = inPlace ? .record(entry.request, issueName: entry.issueName) : .hand
            case .tell(let error, let delegates):
                let hub: AssetEventHub?
                switch delegates {
                case .current: (hub, entry.hub) = (entry.hub, nil)
                case .cancelled: (hub, entry.cancelledHub) = (entry.cancelledHub, nil)
                }
                if let hub { followup.told = (hub, error) }
            case .dropDelegates:
                entry.hub = nil
            case .mergeCancelledDelegates:
                Self.mergeCancelledHub(&entry)
            case .restoreCancelledDelegates:
                if let old = entry.cancelledHub {
                    if let hub = entry.hub { hub.adopt(old) } else { entry.hub = old }
                    entry.cancelledHub = nil
                }
            case .forget:
                followup.forget = true
            case .log(let level, let message):
                logger.log(level: level, "\(message)")
            case .checkDestination, .verifyPartial:
                // Asked for at open only, by an event the scheduler never sends: the Reconciler's.
                logger.error("asset \(entry.id): \(action) asked of the scheduler")
            }
        }
        return followup
    }

    /// Carries out, under the lock and after the entry's update, what `followup` keeps for then:
    /// the end's record (its delegates told once it is written), the retry's timer, the place
    /// in line, letting the entry go.
    func follow(_ id: String, _ followup: inout Followup, in state: inout State) {
        if let end = followup.end {
            submitEnd(end, telling: followup.told)
            followup.told = nil
        }
        // Only while held: a retry let go to the store is timed by the store's timer.
        if let retry = followup.retry, state.entries[id]?.state == .retry {
            scheduleRetry(id, at: retry.at, now: retry.now, in: &state)
        }
        if followup.enqueue, let entry = state.entries[id] {
            state.ready.push(id: id, seq: entry.seq, priority: entry.request.priority, host: entry.host)
        }
        if followup.forget { state.remove(id) }
    }

    /// Hands `event` to asset `id`'s lifecycle, when it is in memory, and carries out what it
    /// asks for under the lock (see ``follow(_:_:in:)``); the rest is the caller's.
    ///
    /// - Returns: what is left for the caller, and the entry as it left memory when the change
    ///   put it at rest.
    @discardableResult
    func handle(_ event: AssetLifecycle.Event, for id: String,
                in state: inout State) -> (followup: Followup, departed: State.Departure?) {
        var followup = Followup()
        let departed = state.update(id) { followup = handle(event, on: &$0) }
        follow(id, &followup, in: &state)
        return (followup, departed)
    }
}
