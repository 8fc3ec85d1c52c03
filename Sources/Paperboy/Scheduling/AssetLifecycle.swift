import Foundation

/// One asset's life: its state together with what the store records of it, changed only by
/// ``handle(_:)``.
///
/// A pure value: no clock, no lock, no file, no store. An event says what happened (the app
/// asked for a pause, the transfer failed, the delivery was recorded); the answer is the list of
/// ``Action``s the scheduler carries out (record this patch, stop the transfer, retry at that
/// date, tell the delegates). Each state change and the patch that records it are made here, in
/// one place, so that the state in memory and the row in the store cannot drift apart, and the
/// whole life is tested state by event (`AssetLifecycleTests`).
///
/// An event that cannot happen in the current state (a transfer that ends while none runs, a
/// delivery of an asset that is not finished) is refused: it changes nothing and asks for
/// nothing. It never traps.
///
/// Progress bytes do not pass through here: the transfer counts them in ``Scheduler/Entry/live``
/// and the partial file's sink records them (see `PartialFileSink`), many times a second and
/// without a state change. The lifecycle takes the durable count when the transfer ends.
struct AssetLifecycle: Sendable, Equatable {
    let id: String
    private(set) var state: PersistedState
    /// Failed attempts since the last one that made progress.
    private(set) var attempts: Int
    /// When the asset last made progress, or started its first attempt since it was asked for,
    /// resumed or reopened (`nil` until then), in the clock's ``LibraryClock/uptime``: the
    /// ``RetryPolicy/noProgressTimeout`` clock.
    private(set) var progressClock: Duration?
    private(set) var retryAt: Date?
    private(set) var detail: String?
    /// The durable bytes of the partial file, as of the last end of a transfer.
    private(set) var bytesOnDisk: Int64
    private(set) var expectedBytes: Int64?
    private(set) var validator: ResourceValidator?
    /// Why the asset failed, while it is `failed`: what ``AssetDownload/waitUntilFinished()`` returns.
    private(set) var failure: LibraryError?
    /// Why the running transfer is being stopped.
    private(set) var stop: Scheduler.StopKind?
    /// Asked for again while a pause or a cancel was stopping it: queued once the transfer has
    /// ended (from zero after a cancel).
    private(set) var restartAfterStop: Bool
    /// Its finished file is being delivered (or the record of the delivery written).
    private(set) var delivering: Bool
    /// The delivery is done and its record being written: it can no longer be kept or fail.
    private(set) var recordingDelivery: Bool
    /// The finished file went straight to its destination: delivery only records it.
    private(set) var inIssue: Bool

    init(id: String, state: PersistedState, attempts: Int = 0, progressClock: Duration? = nil, retryAt: Date? = nil,
         detail: String? = nil, bytesOnDisk: Int64 = 0, expectedBytes: Int64? = nil, validator: ResourceValidator? = nil,
         failure: LibraryError? = nil, stop: Scheduler.StopKind? = nil, restartAfterStop: Bool = false,
         delivering: Bool = false, recordingDelivery: Bool = false, inIssue: Bool = false) {
        self.id = id
        self.state = state
        self.attempts = attempts
        self.progressClock = progressClock
        self.retryAt = retryAt
        self.detail = detail
        self.bytesOnDisk = bytesOnDisk
        self.expectedBytes = expectedBytes
        self.validator = validator
        self.failure = state == .failed ? failure : nil
        self.stop = stop
        self.restartAfterStop = restartAfterStop
        self.delivering = delivering || recordingDelivery
        self.recordingDelivery = recordingDelivery
        self.inIssue = inIssue
    }

    /// The asset as its row says.
    init(_ record: AssetRecord) {
        self.init(id: record.id, state: PersistedState(rawValue: record.state) ?? .idle, attempts: record.attempts,
                  retryAt: record.retryAt, detail: record.detail, bytesOnDisk: record.bytesOnDisk,
                  expectedBytes: record.expectedBytes, validator: record.resourceValidator, failure: record.libraryError)
    }

    // MARK: Handling

    /// Applies `event`: the new state, and what to carry out for it.
    mutating func handle(_ event: Event) -> [Action] {
        let actions = transition(event)
        if state != .failed { failure = nil }
        return actions
    }

    private mutating func transition(_ event: Event) -> [Action] {
        switch event {
        case .download: return download()
        case .pause: return pause()
        case .cancel: return cancel()
        case .remove(let running): return remove(running: running)
        case .checksumChanged:
            guard state == .downloading, stop == nil else { return [] }
            stop = .pause
            restartAfterStop = true
            return [.stopTransfer]
        case .close(let running):
            guard running else { return [.cancelRetry] }
            if stop == nil { stop = .close }
            return [.cancelRetry, .stopTransfer]
        case .start(let uptime):
            guard state == .queued else { return [] }
            state = .downloading
            stop = nil
            if progressClock == nil { progressClock = uptime }
            return [.startTransfer, .record(patch(state: .downloading))]
        case .networkRefused:
            guard state == .queued else { return [] }
            state = .network
            return [.record(patch(state: .network))]
        case .networkChanged(let allowed):
            if state == .downloading, !allowed, stop == nil {
                stop = .network
                return [.stopTransfer]
            }
            guard state == .network, allowed else { return [] }
            state = .queued
            return [.enqueue, .record(patch(state: .queued))]
        case .retryDue:
            guard state == .retry else { return [] }
            state = .queued
            return [.enqueue, .record(patch(state: .queued))]
        case .recordingFailed(let error):
            return recordingFailed(error)
        case .reloaded(let clock):
            progressClock = clock
            return []
        case .transferFinished, .transferStopped, .transferFailed:
            return transferEnded(event)
        case .deliveryStarted:
            guard state == .finished, !delivering else { return [] }
            delivering = true
            return [.deliver(inPlace: false)]
        case .deliveryKept:
            guard state == .finished, delivering, !recordingDelivery else { return [] }
            delivering = false
            return []
        case .deliveryFailed(let error):
            guard state == .finished, delivering, !recordingDelivery else { return [] }
            fail(error)
            delivering = false
            var patch = AssetPatch(id: id)
            patch.fail(error)
            return [.recordEnd(patch)]
        case .deliveryCompleted:
            guard state == .finished, delivering, !recordingDelivery else { return [] }
            recordingDelivery = true
            var patch = patch(state: .delivered)
            patch.detail = .some(nil)
            patch.retryAt = .some(nil)
            return [.recordDelivery(patch)]
        case .deliveryRecorded:
            guard state == .finished, recordingDelivery else { return [] }
            state = .delivered
            recordingDelivery = false
            return [.dropDelegates]
        case .deliveryUnrecorded(let error):
            guard state == .finished, recordingDelivery else { return [] }
            // The store refused the record: the failure stays in memory (the entry is pinned).
            fail(error)
            delivering = false
            recordingDelivery = false
            return []
        case .deliverySettled:
            guard state == .delivered, delivering else { return [] }
            delivering = false
            return [.forget]
        case .reopened(let inbox, let partial, let unpacks):
            return reopened(inbox: inbox, partial: partial, unpacks: unpacks)
        case .destinationChecked(let holdsFile):
            guard state == .finished, !delivering else { return [] }
            if holdsFile {
                // Moved to its destination; the crash came before the record.
                state = .delivered
                var patch = patch(state: .delivered)
                patch.bytesOnDisk = bytesOnDisk
                return [.record(patch)]
            }
            // Taken by a delegate that did not return: fetch it again (at least once).
            state = .queued
            bytesOnDisk = 0
            validator = nil
            var patch = patch(state: .queued)
            patch.bytesOnDisk = 0
            patch.validator = .some(nil)
            return [.log(.warning, "asset \(id): finished file missing from the inbox; downloading it again"), .record(patch)]
        case .partialVerified(let length):
            guard length > bytesOnDisk, stop == nil, !restartAfterStop,
                  [.idle, .queued, .paused, .retry, .network, .downloading, .failed].contains(state) else { return [] }
            return continueFrom(length, "written in order in this boot")
        }
    }

    /// Continues from the `length` bytes on disk (`why`: what the disk says of them), recorded.
    private mutating func continueFrom(_ length: Int64, _ why: String) -> [Action] {
        let recorded = bytesOnDisk
        bytesOnDisk = length
        var patch = AssetPatch(id: id)
        patch.bytesOnDisk = length
        return [.log(.info, "asset \(id): \(recorded) bytes recorded, \(length) \(why); continuing from \(length)"), .record(patch)]
    }

    /// What the files on disk say when the library opens: a file in the inbox means the transfer
    /// completed, whatever was recorded; a count of bytes is trusted only up to the partial
    /// file's length (see ``Reconciler`` for the rules).
    private mutating func reopened(inbox: Int64?, partial: Int64?, unpacks: Bool) -> [Action] {
        // An asset just read from its row has no stop or delivery under way.
        guard stop == nil, !restartAfterStop, !delivering else { return [] }
        switch state {
        case .delivered:
            return []
        case .finished:
            guard inbox == nil else { return [] }
            guard unpacks else { return [.checkDestination] }
            // The archive is removed only after a complete unpack.
            state = .delivered
            var patch = patch(state: .delivered)
            patch.bytesOnDisk = bytesOnDisk
            return [.record(patch)]
        case .downloading, .queued, .retry, .network, .paused, .idle, .failed, .cancelled:
            if let size = inbox {
                // The rename into the inbox is the commit point of a transfer that has one,
                // whatever state the database last recorded: its batched updates (queued,
                // downloading, finished) may not have been written when the app died, even
                // inside `didFinishDownloadingTo`. Nothing else leaves a file in the inbox.
                state = .finished
                bytesOnDisk = size
                expectedBytes = size
                var patch = patch(state: .finished)
                patch.bytesOnDisk = size
                patch.expectedBytes = .some(size)
                return [.removePartial, .record(patch)]
            }
            if state == .cancelled {
                // Cancelled while its transfer was stopping (the cancel is recorded at once): its
                // bytes are given up, as the stop would have.
                guard partial != nil || bytesOnDisk != 0 else { return [] }
                bytesOnDisk = 0
                validator = nil
                return [.removePartial, .record(Self.cancelledPatch(id))]
            }
            let onDisk = partial ?? 0
            if onDisk > bytesOnDisk { return [.verifyPartial(length: onDisk)] }
            return onDisk < bytesOnDisk ? continueFrom(onDisk, "on disk") : []
        }
    }

    private mutating func download() -> [Action] {
        switch state {
        case .idle, .failed, .cancelled, .paused:
            // A pause keeps the count of attempts without progress; anything else starts afresh.
            if state != .paused { attempts = 0 }
            progressClock = nil
            state = .queued
            detail = nil
            stop = nil
            var patch = patch(state: .queued)
            patch.detail = .some(nil)
            patch.attempts = attempts
            return [.record(patch), .enqueue]
        case .finished:
            return delivering ? [] : [.startDelivery]
        case .downloading where stop == .pause || stop == .cancel:
            restartAfterStop = true
            // Recorded now, over the pause or cancel recorded when it was asked for.
            return [.record(patch(state: .queued))]
        case .queued, .retry, .downloading, .delivered, .network:
            return []
        }
    }

    private mutating func pause() -> [Action] {
        switch state {
        case .downloading:
            // The last word wins over a download asked for while stopping; a pending cancel
            // stays a cancel (its bytes are already given up).
            restartAfterStop = false
            var actions: [Action] = []
            if stop != .cancel {
                stop = .pause
                // Recorded now, not when the transfer has stopped: a kill meanwhile leaves it
                // paused (its bytes are recorded as the transfer stops).
                actions.append(.record(patch(state: .paused)))
            }
            return actions + [.mergeCancelledDelegates, .stopTransfer]
        case .queued, .retry, .idle, .network:
            state = .paused
            return [.cancelRetry, .record(patch(state: .paused))]
        case .paused, .finished, .delivered, .failed, .cancelled:
            return []
        }
    }

    private mutating func cancel() -> [Action] {
        switch state {
        case .downloading:
            stop = .cancel
            restartAfterStop = false
            // Recorded now, not when the transfer has stopped: a kill meanwhile leaves it
            // cancelled (the next open removes its partial file).
            return [.mergeCancelledDelegates, .stopTransfer, .record(patch(state: .cancelled))]
        case .queued, .retry, .idle, .paused, .failed, .network:
            state = .cancelled
            bytesOnDisk = 0
            validator = nil
            return [.cancelRetry, .showBytes(written: 0, expected: nil), .removePartial,
                    .recordEnd(Self.cancelledPatch(id)), .tell(LibraryError.cancelled(asset: id), .current)]
        case .finished, .delivered, .cancelled:
            return []
        }
    }

    private mutating func remove(running: Bool) -> [Action] {
        if running {
            stop = .remove
            return [.cancelRetry, .stopTransfer]
        }
        // Its row goes with its issue: nothing to record.
        state = .cancelled
        delivering = false
        recordingDelivery = false
        return [.cancelRetry, .mergeCancelledDelegates, .tell(LibraryError.cancelled(asset: id), .current), .forget]
    }

    private mutating func recordingFailed(_ error: LibraryError) -> [Action] {
        guard !delivering else { return [] }
        switch state {
        case .downloading:
            stop = .storage
            restartAfterStop = false
            detail = error.message
            return [.stopTransfer]
        case .queued, .retry, .network:
            fail(error)
            var patch = AssetPatch(id: id)
            patch.fail(error)
            return [.cancelRetry, .tell(error, .current), .record(patch)]
        case .idle, .paused, .finished, .delivered, .failed, .cancelled:
            return []
        }
    }

    private mutating func transferEnded(_ event: Event) -> [Action] {
        guard state == .downloading else { return [] }
        if stop == .remove {
            // Removed with its issue: its delegates hear that it ended, as after a cancel.
            state = .cancelled
            stop = nil
            return [.mergeCancelledDelegates, .tell(LibraryError.cancelled(asset: id), .current), .forget]
        }
        var event = event
        if case .transferFailed(let failure) = event, stop == .pause || stop == .cancel || stop == .storage {
            // Asked to pause or cancel while it failed: that is what the app wants now.
            event = .transferStopped(written: failure.written, validator: failure.validator)
        }
        var actions: [Action] = []
        if case .transferStopped = event {} else {
            // A pause or cancel came too late: the transfer ended on its own, for the delegates
            // of before and after it alike.
            actions.append(.restoreCancelledDelegates)
            stop = nil
            restartAfterStop = false
        }
        switch event {
        case .transferFinished(let size, let validator, let inIssue, let deliversItself, let hasDelegates):
            self.inIssue = inIssue
            state = .finished
            bytesOnDisk = size
            expectedBytes = size
            self.validator = validator
            detail = nil
            var patch = patch(state: .finished)
            patch.bytesOnDisk = size
            patch.expectedBytes = .some(size)
            patch.detail = .some(nil)
            actions += [.showBytes(written: nil, expected: size), .record(patch)]
            // Marked here, with the state, so that the library never looks idle between the end
            // of the transfer and the delivery.
            delivering = deliversItself || hasDelegates
            if delivering { actions.append(.deliver(inPlace: inIssue && !hasDelegates)) }
            return actions
        case .transferStopped(let written, let validator):
            return actions + stopped(written: written, validator: validator)
        case .transferFailed(let failure):
            return actions + failed(failure)
        default:
            return []
        }
    }

    private mutating func stopped(written: Int64, validator: ResourceValidator?) -> [Action] {
        // A pause, a network wait or closing is no failure to make progress.
        progressClock = nil
        bytesOnDisk = written
        self.validator = validator
        defer {
            stop = nil
            restartAfterStop = false
        }
        switch stop {
        case .cancel:
            state = .cancelled
            bytesOnDisk = 0
            self.validator = nil
            var actions: [Action] = [.showBytes(written: 0, expected: nil), .removePartial]
            let told = Action.tell(LibraryError.cancelled(asset: id), restartAfterStop ? .cancelled : .current)
            guard restartAfterStop else { return actions + [.recordEnd(Self.cancelledPatch(id)), told] }
            // Asked for again meanwhile: from zero, for the new delegates.
            state = .queued
            attempts = 0
            var patch = Self.cancelledPatch(id)
            patch.state = .queued
            patch.attempts = 0
            actions += [.record(patch), told, .enqueue]
            return actions
        case .storage:
            // Its progress cannot be recorded: failed, with what the store said (the store has
            // given up its record already: not one to wait for).
            let error = LibraryError(.storage, detail ?? "asset \(id): its progress cannot be recorded")
            fail(error)
            var patch = AssetPatch(id: id)
            patch.fail(error)
            return [.record(patch), .tell(error, .current)]
        case .network:
            state = .network
            return [.record(patch(state: .network))]
        case .close:
            // Stopped by closing the library: it continues at the next open.
            state = .queued
            return [.record(patch(state: .queued))]
        case .pause, .remove, nil:
            guard restartAfterStop else {
                state = .paused
                return [.record(patch(state: .paused))]
            }
            state = .queued
            return [.record(patch(state: .queued)), .enqueue]
        }
    }

    private mutating func failed(_ failure: TransferFailure) -> [Action] {
        let error = failure.error
        // Progress is what the next attempt will not fetch again: the durable offset, or the
        // recorded pieces past it.
        let progressed = failure.written > bytesOnDisk || failure.piecesGrew
        if progressed {
            attempts = 0
            progressClock = failure.uptime
        } else {
            attempts += 1
        }
        bytesOnDisk = failure.written
        validator = failure.validator
        detail = error.message
        var patch = AssetPatch(id: id)
        patch.attempts = attempts
        patch.detail = .some(error.message)
        var actions: [Action] = [.showBytes(written: failure.written + failure.pieceBytes, expected: nil)]
        let stalled = progressClock.map { failure.uptime - $0 } ?? .zero
        let policy = failure.policy
        switch policy.decision(afterFailedAttempts: attempts, isRetryable: error.isRetryable,
                               retryAfter: failure.retryAfter, withoutProgressFor: stalled, random: failure.jitter) {
        case .retry(let delay):
            let date = failure.at.addingTimeInterval(delay.seconds)
            state = .retry
            retryAt = date
            patch.state = .retry
            patch.retryAt = .some(date)
            let kept = progressed ? " after progress to \(failure.written) bytes" : ""
            actions += [
                .log(.info, "asset \(id): \(error.message)\(kept); retry \(attempts + 1) of \(policy.maxAttempts) without progress in \(String(format: "%.1f", delay.seconds)) s"),
                .record(patch), .scheduleRetry(at: date, now: failure.at),
            ]
        case .giveUp(let reason):
            if let reason { detail = "\(error.message) (\(reason))" }
            let final = error.withMessage(detail ?? error.message)
            fail(final)
            patch.fail(final)
            actions += [.recordEnd(patch), .tell(final, .current)]
        }
        return actions
    }

    private mutating func fail(_ error: LibraryError) {
        state = .failed
        failure = error
        detail = error.message
    }

    private func patch(state: PersistedState) -> AssetPatch {
        var patch = AssetPatch(id: id)
        patch.state = state
        return patch
    }

    /// The record of a cancel: no bytes, no validator.
    static func cancelledPatch(_ id: String) -> AssetPatch {
        var patch = AssetPatch(id: id)
        patch.state = .cancelled
        patch.bytesOnDisk = 0
        patch.validator = .some(nil)
        return patch
    }
}
