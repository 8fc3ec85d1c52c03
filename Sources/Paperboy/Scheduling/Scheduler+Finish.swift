import Foundation
import Logging
import Synchronization

// Ending a transfer: the slot given back, the outcome recorded (finished, stopped, failed), a
// retry timed, the delivery started.
extension Scheduler {
    /// Times the retry of `id` for `date` (as seen at `now`, by default the clock's now) on the
    /// clock, in memory.
    func scheduleRetry(_ id: String, at date: Date, now: Date? = nil, in state: inout State) {
        let delay = Self.delay(until: date, from: now ?? clock.now)
        let clock = self.clock
        state.update(id) { entry in
            entry.retryTask?.cancel()
            entry.retryTask = Task { [self] in
                do {
                    try await clock.sleep(for: delay)
                } catch {
                    return
                }
                retryDue(id)
            }
        }
    }

    /// The time from `now` to `date`, to the microsecond (`Date` arithmetic leaves noise far
    /// below it), at least zero and at most the longest delay a source may ask for
    /// (``RequestedDelay/max``, a day): a stored date may be years away (a damaged row), and a
    /// sleep's nanoseconds must not overflow.
    static func delay(until date: Date, from now: Date) -> Duration {
        let microseconds = (date.timeIntervalSince(now) * 1_000_000).rounded()
        let limit = Double(RequestedDelay.max.components.seconds) * 1_000_000
        return .microseconds(Int64(min(max(0, microseconds), limit)))
    }

    /// Arms the timer of the retries waiting in the store for the earliest due (a day away at
    /// most: a damaged row's date may be years away), unless one is armed for earlier.
    func armRetryTimer(_ state: inout State) {
        guard !state.closed, let due = state.storedRetryDue else { return }
        if let armed = state.retryTimer, armed.due <= due { return }
        state.retryTimer?.task.cancel()
        // In whole milliseconds, rounded up, and one more: the store keeps dates to the nearest
        // millisecond, and waking before the stored date would find nothing due.
        let exact = Self.delay(until: due, from: clock.now)
        let milliseconds = (exact.seconds * 1000).rounded(.up)
        let clock = self.clock
        let task = Task { [weak self] in
            try? await clock.sleep(for: .milliseconds(Int64(milliseconds) + 1))
            guard !Task.isCancelled, let self else { return }
            self.storedRetriesDue()
        }
        state.retryTimer = (task, due)
    }

    /// Queues in the store the retries due now, pages them in, and arms the timer for the next.
    func storedRetriesDue() {
        state.withLock { state in
            guard !state.closed else { return }
            state.retryTimer = nil
            let held = state.entries.values.filter { $0.state == .retry }.map(\.id)
            let now = clock.now
            do {
                if try store.queueDueRetries(now: now, except: held) > 0 { state.backlog = true }
                state.storedRetryDue = try store.earliestRetry(now: now, except: held)
            } catch {
                // Read again shortly: the retries are not given up.
                logger.error("\((error as? LibraryError)?.message ?? "\(error)"); trying again in \(Self.refillRetryDelay)")
                state.storedRetryDue = now.addingTimeInterval(Self.refillRetryDelay.seconds)
            }
            if state.storedRetryDue == nil { state.retryClocks = [:] }
            pump(&state)
            wakeIdleWaiters(&state)
        }
    }

    func retryDue(_ id: String) {
        state.withLock { state in
            guard let entry = state.entries[id], entry.state == .retry else { return }
            var followup = Followup()
            state.update(id) { entry in
                entry.retryTask = nil
                followup = handle(.retryDue, on: &entry)
            }
            follow(id, &followup, in: &state)
            pump(&state)
        }
        broadcastState(id)
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

    static func release(_ host: String, in state: inout State) {
        state.running -= 1
        state.hostCounts[host, default: 1] -= 1
        if state.hostCounts[host] == 0 { state.hostCounts[host] = nil }
    }

    func finish(_ id: String, slot: TransferSlot, outcome: Outcome) {
        let host = slot.host
        let holdsSlot = slot.take()
        var followup = Followup()
        var departed: State.Departure?
        // One reading for the retry's date and its timer, so that the timer ends exactly at the date.
        let failedAt = clock.now
        state.withLock { state in
            if holdsSlot { Self.release(host, in: &state) }
            state.perTransferLimiters[id] = nil
            guard let current = state.entries[id] else {
                pump(&state)
                wakeIdleWaiters(&state)
                return
            }
            let event: AssetLifecycle.Event
            switch outcome {
            case .finished(let size, let validator, let inIssue):
                // The delegates of a cancel that came too late are the asset's again.
                let hasDelegates = current.hub?.hasDelegates == true || current.cancelledHub?.hasDelegates == true
                event = .transferFinished(size: size, validator: validator, inIssue: inIssue,
                                          deliversItself: current.request.deliversItself, hasDelegates: hasDelegates)
            case .stopped(let written, let validator):
                event = .transferStopped(written: written, validator: validator)
            case .failed(let error, let retryAfter, let written, let validator, let pieceBytes, let piecesGrew):
                event = .transferFailed(AssetLifecycle.TransferFailure(
                    error: error, retryAfter: retryAfter, written: written, validator: validator, pieceBytes: pieceBytes,
                    piecesGrew: piecesGrew,
                    at: failedAt, uptime: clock.uptime, policy: settings.retry, jitter: settings.retryJitter(0...1)))
            }
            departed = state.update(id) { entry in
                entry.task = nil
                followup = handle(event, on: &entry)
            }
            follow(id, &followup, in: &state)
            pump(&state)
            wakeIdleWaiters(&state)
        }
        if followup.end == nil {
            if let (hub, error) = followup.told { hub.failed(error) }
            broadcastState(id, departed: departed)
        }
        if let start = followup.delivery { delivery.carryOut(start, for: id) }
    }

    /// Queues `patch`, which ends asset `id` (failed, cancelled: its entry made
    /// ``Entry/recordingEnd`` by the same update, under the lock), and tells the end once the
    /// batch carrying it is committed, or the store gave up: the waits settle, `failure`'s
    /// delegates hear it, and so do the library's events. What the app is told of survives a
    /// kill -9; ends share commits as deliveries do.
    func submitEnd(_ patch: AssetPatch, telling failure: (AssetEventHub, LibraryError)?) {
        let id = patch.id
        store.submit(patch) { [self] _ in
            let departed = state.withLock { state -> State.Departure? in
                let departed = state.update(id) { $0.recordingEnd = false }
                wakeIdleWaiters(&state)
                return departed
            }
            if let (hub, error) = failure { hub.failed(error) }
            broadcastState(id, departed: departed)
        }
    }
}
