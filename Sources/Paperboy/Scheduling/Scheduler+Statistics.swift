import Foundation

// The limiter's statistics, recorded in the store for `paperboy status` (another process reads
// them): about once a second while transfers run; once nothing runs and the last bytes are
// recorded, the recorder waits for the next transfer to start instead of looking every second,
// so that an idle library (the daemon) does not wake.
extension Scheduler {
    /// Records the statistics if bytes were granted since `last`; returns the bytes granted.
    func recordLimiterStatistics(after last: Int64) -> Int64 {
        let statistics = limiter.statistics
        guard statistics.bytesGranted != last else { return last }
        if let data = try? JSONCoding.plain.encoder.encode(statistics) {
            try? store.setMeta("bandwidth", String(decoding: data, as: UTF8.self))
        }
        return statistics.bytesGranted
    }

    /// Returns when a transfer runs (at once if one does), when the task is cancelled, or when
    /// the scheduler is gone; holds the scheduler only while it parks (`scheduler` is weak).
    static func untilATransferStarts(_ scheduler: @escaping @Sendable () -> Scheduler?) async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let parked = scheduler()?.state.withLock { state -> Bool in
                    guard state.running == 0, !Task.isCancelled else { return false }
                    state.statisticsWaiter?.resume()
                    state.statisticsWaiter = continuation
                    return true
                } ?? false
                if !parked { continuation.resume() }
            }
        } onCancel: {
            scheduler()?.state.withLock { $0.statisticsWaiter.take() }?.resume()
        }
    }
}
