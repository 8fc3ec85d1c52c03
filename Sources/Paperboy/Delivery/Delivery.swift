import Foundation

/// Hands finished files over: to the app's delegates, into the issue folder (moved or
/// unpacked), and records the delivery (state, issue cover and new mark, events, waits).
///
/// The scheduler decides what runs; once a transfer has finished, this takes the asset from
/// the inbox to where it belongs. It works on the scheduler's bookkeeping, under its lock.
struct Delivery: Sendable {
    let scheduler: Scheduler

    func start(_ id: String) {
        let begin = scheduler.state.withLock { state -> Bool in
            guard let entry = state.entries[id], entry.state == .finished, !entry.delivering else { return false }
            return scheduler.handle(.deliveryStarted, for: id, in: &state).followup.delivery != nil
        }
        guard begin else { return }
        Task { await deliver(id) }
    }

    func deliver(_ id: String) async {
        guard let (request, issueName, hub, inIssue) = scheduler.state.withLock({ state in
            state.entries[id].map { ($0.request, $0.issueName, $0.hub, $0.inIssue) }
        }) else { return }
        let inbox = scheduler.layout.inboxURL(asset: id, request: request)
        var handledByDelegate = false
        if inIssue, let hub, hub.hasDelegates, let path = request.destinationPath {
            // A delegate attached while the file went straight to its destination: it still gets
            // a file of its own for the call, a second link to the delivered one in the inbox.
            let delivered = scheduler.layout.deliveredURL(issue: issueName, path: path)
            if link(delivered.path, inbox.path) == 0 {
                _ = await hub.finished(at: inbox)
                POSIX.remove(inbox)
            }
        }
        if !inIssue, let hub, hub.hasDelegates, POSIX.exists(inbox) {
            if await hub.finished(at: inbox) {
                // A delegate asked to keep the file: it stays in the inbox for the next attach.
                scheduler.state.withLock { state in
                    scheduler.handle(.deliveryKept, for: id, in: &state)
                    scheduler.wakeIdleWaiters(&state)
                }
                return
            }
            handledByDelegate = true
        }
        var failure: LibraryError?
        if !inIssue, POSIX.exists(inbox) {
            if request.unpack == .zip {
                let folder = scheduler.layout.contentURL(issue: issueName)
                let (name, limits, space) = (request.url.redactedString, scheduler.settings.unpackLimits, scheduler.space)
                do {
                    // Seconds of reading, inflating and writing: not on the cooperative pool.
                    try await onAThreadOfItsOwn { () throws(LibraryError) in
                        try POSIX.makeDirectory(folder)
                        try Unpacker.unzip(inbox, named: name, into: folder, staging: folder.appendingPathComponent(".unpack-\(id)"),
                                           limits: limits, space: space)
                    }
                } catch {
                    failure = error
                }
                POSIX.remove(inbox)
            } else if let path = request.destinationPath {
                do {
                    try moveIntoIssue(inbox, issueName: issueName, path: path)
                } catch {
                    failure = error
                    POSIX.remove(inbox)
                }
            } else if handledByDelegate {
                POSIX.remove(inbox)
            } else {
                // Nobody took it and it has nowhere to go: keep it for the next delegate.
                scheduler.state.withLock { state in
                    scheduler.handle(.deliveryKept, for: id, in: &state)
                    scheduler.wakeIdleWaiters(&state)
                }
                return
            }
        }
        complete(id, request: request, issueName: issueName, failure: failure)
    }

    /// Records the end of a delivery (`failure` when it failed): state, issue cover and new
    /// mark, events, waiters.
    ///
    /// Either is reported (state, events, waiters) only once the database has recorded it: the
    /// update joins the next batch, so deliveries share commits, and the asset stays busy
    /// (`delivering`, or ``Scheduler/Entry/recordingEnd``) until that batch is written.
    ///
    /// - Parameter unlessDelegated: record nothing (and return `false`) if a delegate is attached
    ///   to the asset now: it is owed the `finished` call that ``deliver(_:)`` makes.
    @discardableResult
    func complete(_ id: String, request: AssetRequest, issueName: String, failure: LibraryError?,
                                  unlessDelegated: Bool = false) -> Bool {
        var delivered: AssetPatch?
        let recorded = scheduler.state.withLock { state -> Bool in
            guard state.entries[id] != nil else { return true }
            if unlessDelegated, state.entries[id]?.hub?.hasDelegates == true { return false }
            // A failure is told (waits, events) once recorded.
            delivered = scheduler.handle(failure.map { .deliveryFailed($0) } ?? .deliveryCompleted, for: id, in: &state)
                .followup.delivered
            return true
        }
        guard recorded else { return false }
        if let delivered {
            // The file is in place; should the database refuse, the next open records it (see
            // Reconciler).
            scheduler.store.submit(delivered) { error in
                record(id, request: request, issueName: issueName, error: error)
            }
            return true
        }
        if let failure {
            scheduler.logger.error("asset \(id): \(failure.message)")
        }
        return true
    }

    /// The second half of a successful delivery, once the store wrote (or gave up writing) its
    /// `delivered` update.
    private func record(_ id: String, request: AssetRequest, issueName: String, error: LibraryError?) {
        var completedIssue: String?
        var coverPath: RelativePath?
        let failure = error.map {
            $0.withMessage("asset \(id) is in its issue folder but cannot be recorded as delivered: \($0.message)")
        }
        scheduler.state.withLock { state in
            guard state.entries[id] != nil else { return }
            if let failure {
                state.update(id) { entry in
                    _ = scheduler.handle(.deliveryUnrecorded(failure), on: &entry)
                    entry.pinned = true
                }
                return
            }
            // Still `delivering` (busy) until the issue's cover and new mark are recorded.
            scheduler.handle(.deliveryRecorded, for: id, in: &state)
            // The request's path was checked when the asset was added, and read back.
            if request.role == .cover, let path = request.destinationPath, request.unpack == nil {
                coverPath = try? RelativePath(path, door: "cover path")
            }
            // Complete when no other asset of the issue is on its way in memory (one recorded in the
            // same batch, its own record still to come, included) nor undelivered in the store.
            // (A delivered entry leaves memory once recorded: every other one is on its way.)
            if state.inMemoryByIssue[issueName, default: 0] <= 1 { completedIssue = issueName }
        }
        if completedIssue != nil, scheduler.store.hasUndeliveredAssets(issueName: issueName) { completedIssue = nil }
        if let failure {
            scheduler.logger.error("\(failure.message)")
            scheduler.broadcastState(id)
            scheduler.state.withLock { scheduler.wakeIdleWaiters(&$0) }
            return
        }
        scheduler.broadcastState(id, delivered: true)
        if let coverPath {
            scheduler.store.updateIssue(named: issueName) { $0.coverPath = coverPath }
        }
        if let completedIssue {
            scheduler.store.flush()
            scheduler.store.updateIssue(named: completedIssue) { $0.isNew = true }
            if let record = scheduler.store.issue(named: completedIssue) {
                scheduler.broadcaster.send(.issueDownloadCompleted(scheduler.backend.issue(record)))
            }
        }
        scheduler.state.withLock { state in
            if state.entries[id]?.state == .delivered {
                scheduler.handle(.deliverySettled, for: id, in: &state)
                // Settled last, so that a wait on the issue's last asset sees the issue complete.
                state.settle(id, .delivered)
            }
            scheduler.wakeIdleWaiters(&state)
        }
    }

    /// Moves a finished file to `path` inside the issue folder, refusing anything that would
    /// leave it (a symbolic link planted in the folder included): see ``IssueFolder``.
    func moveIntoIssue(_ file: URL, issueName: String, path: String) throws(LibraryError) {
        try IssueFolder.move(file, to: path, in: scheduler.layout.contentURL(issue: issueName), issueName: issueName)
    }
}

extension Delivery {
    /// How a delivery starts after a transfer or a download.
    enum Start {
        /// Through ``Delivery/start(_:)``, which checks it is not under way.
        case start
        /// Handed to the delegates (or moved into place) by ``Delivery/deliver(_:)``.
        case hand
        /// Already at its destination: only recorded, unless a delegate is attached by now.
        case record(AssetRequest, issueName: String)
    }

    /// Starts the delivery `start` says, outside the scheduler's lock.
    func carryOut(_ start: Start, for id: String) {
        switch start {
        case .start:
            self.start(id)
        case .hand:
            Task { await deliver(id) }
        case .record(let request, let issueName):
            // Nobody to hand it to: recorded here, without another task. A delegate attached
            // since gets the full delivery instead.
            if !complete(id, request: request, issueName: issueName, failure: nil, unlessDelegated: true) {
                Task { await deliver(id) }
            }
        }
    }
}

extension Scheduler {
    /// The delivery step of this scheduler.
    var delivery: Delivery { Delivery(scheduler: self) }
}
