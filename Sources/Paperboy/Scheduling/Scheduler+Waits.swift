import Foundation

extension Scheduler {
    /// Waits until asset `id` is delivered, fails, is cancelled, or the library closes.
    ///
    /// - Throws: `CancellationError` as soon as the waiting task is cancelled (the download
    ///   goes on).
    func waitUntilFinished(_ id: String) async throws(CancellationError) -> AssetOutcome {
        enum Now { case settled(AssetOutcome), waiting, cancelled }
        let key = state.withLock { state in
            state.nextWaiterKey += 1
            return state.nextWaiterKey
        }
        let outcome: AssetOutcome? = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<AssetOutcome?, Never>) in
                let now = state.withLock { state -> Now in
                    if state.closed { return .settled(.closed) }
                    // An asset at rest is in the store only: ended, or waited for until it is
                    // asked for (taken into memory) and ends.
                    let ended = state.entries[id].map(Self.settledOutcome) ?? storedOutcome(id)
                    if let ended { return .settled(ended) }
                    // Registered under the lock the cancellation handler takes: a cancel either
                    // came before (seen here) or finds the waiter.
                    if Task.isCancelled { return .cancelled }
                    state.assetWaiters[id, default: [:]][key] = continuation
                    return .waiting
                }
                switch now {
                case .settled(let outcome):
                    continuation.resume(returning: outcome)
                case .cancelled:
                    continuation.resume(returning: nil)
                case .waiting:
                    break
                }
            }
        } onCancel: {
            let waiter = state.withLock { state in
                defer { if state.assetWaiters[id]?.isEmpty == true { state.assetWaiters[id] = nil } }
                return state.assetWaiters[id]?.removeValue(forKey: key)
            }
            waiter?.resume(returning: nil)
        }
        guard let outcome else { throw CancellationError() }
        return outcome
    }

    /// How an asset the scheduler does not hold ended, `nil` if it did not (idle, paused).
    private func storedOutcome(_ id: String) -> AssetOutcome? {
        guard let record = store.asset(id: id) else { return .cancelled }
        switch PersistedState(rawValue: record.state) {
        case .delivered: return .delivered
        case .failed: return .failed(record.libraryError ?? LibraryError(.transport, "asset \(id) failed"))
        case .cancelled: return .cancelled
        default: return nil
        }
    }

    /// The outcome of an asset that ended (failed or cancelled), `nil` while it is on its way,
    /// idle or paused, or while its end is not committed yet. A delivered entry settles its waits
    /// itself, once fully recorded.
    static func settledOutcome(_ entry: Entry) -> AssetOutcome? {
        guard !entry.recordingEnd else { return nil }
        return switch entry.state {
        case .failed:
            .failed(entry.failure ?? LibraryError(.transport, entry.detail ?? "asset \(entry.id) failed"))
        case .cancelled:
            .cancelled
        default:
            nil
        }
    }

    /// A transfer continues from `total` bytes: its delegates are told now, or, if none is
    /// attached, the first one to attach before the file is delivered (see `download`).
    func transferResumed(_ id: String, total: Int64, expected: Int64?) {
        state.withLock { state in
            guard let entry = state.entries[id] else { return }
            if let hub = entry.hub, hub.hasDelegates {
                hub.resumed(total: total, expected: expected)
            } else {
                state.update(id) { $0.unannouncedResume = (total, expected) }
            }
        }
    }
}
