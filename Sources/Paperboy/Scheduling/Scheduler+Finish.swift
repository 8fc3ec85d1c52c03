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
        var deliver = false
        var deliverNow: (request: AssetRequest, issueName: String)?
        var failure: (AssetEventHub, LibraryError)?
        var requeue: (seq: Int64, priority: Int, host: String)?
        var departed: State.Departure?
        /// The update that ends it (failed, cancelled): the app hears of the end once it is committed.
        var ended: AssetPatch?
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
            if current.stop == .remove {
                // Removed with its issue: its delegates hear that it ended, as after a cancel.
                var ended = current
                Self.mergeCancelledHub(&ended)
                if let hub = ended.hub { failure = (hub, LibraryError.cancelled(asset: id)) }
                state.update(id) { $0.state = .cancelled; $0.task = nil }
                state.remove(id)
                pump(&state)
                wakeIdleWaiters(&state)
                return
            }
            departed = state.update(id) { entry in
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
                // A pause's, a cancel's or a failure's record was already given up by the store.
                let unrecordable = entry.stop == .storage
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
                            failure = (cancelled, LibraryError.cancelled(asset: id))
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
                    let now = clock.uptime
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
                    let delay = retry.delay(afterFailedAttempts: entry.attempts, retryAfter: retryAfter, random: settings.retryJitter)
                    let stalled = entry.progressClock.map { now - $0 } ?? .zero
                    let outOfTime = retry.noProgressTimeout.map { stalled + delay > $0 } ?? false
                    if error.isRetryable && entry.attempts < retry.maxAttempts && !outOfTime {
                        let date = failedAt.addingTimeInterval(delay.seconds)
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
                        let final = error.withMessage(entry.detail ?? error.message)
                        entry.failure = final
                        patch.fail(final)
                        if let hub = entry.hub {
                            failure = (hub, final)
                            entry.hub = nil
                        }
                    }
                }
                if (entry.state == .failed || entry.state == .cancelled) && !unrecordable {
                    entry.recordingEnd = true
                    ended = patch
                } else {
                    store.submit(patch)
                }
            }
            if let ended { submitEnd(ended, telling: failure) }
            if let entry = state.entries[id], entry.state == .retry {
                scheduleRetry(id, at: entry.retryAt ?? failedAt, now: failedAt, in: &state)
            }
            if let requeue {
                state.ready.push(id: id, seq: requeue.seq, priority: requeue.priority, host: requeue.host)
            }
            pump(&state)
            wakeIdleWaiters(&state)
        }
        if ended == nil {
            if let (hub, error) = failure { hub.failed(error) }
            broadcastState(id, departed: departed)
        }
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

    static func cancelledPatch(_ id: String) -> AssetPatch {
        var patch = AssetPatch(id: id)
        patch.state = .cancelled
        patch.bytesOnDisk = 0
        patch.validator = .some(nil)
        return patch
    }
}
