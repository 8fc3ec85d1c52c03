import Synchronization

/// The bandwidth limits one transfer's bytes pass through: its flow in each limiter (the
/// per-transfer one first, then the global one), and the grants a refused ``tryTake(_:)``
/// leaves for ``whenGranted(_:)``.
///
/// The one place where a sink asks the limits for bytes from the network: the partial file and
/// its segments (``PartialFileSink``), a chunk fetched alone to repair it (``ChunkCollector``)
/// and an asset's chunk index (``IndexSink``) all take their bytes here, so none bypasses a
/// limit. Bytes copied from files the library holds are not asked for.
///
/// A transport's calls do not overlap (the contract), so one refused request waits at a time.
final class TransferBandwidth: Sendable {
    let limiters: [BandwidthLimiter]
    /// This transfer's flow in each limiter, for fair sharing.
    let flows: [UInt64]
    /// Bytes each limiter already granted and not yet used, and the request that could not be
    /// granted (limiter index, bytes).
    private let credits: Mutex<(granted: [Int], pending: (index: Int, bytes: Int)?)>

    init(limiters: [BandwidthLimiter]) {
        self.limiters = limiters
        flows = limiters.map { $0.makeFlow() }
        credits = Mutex((Array(repeating: 0, count: limiters.count), nil))
    }

    /// Waits until every limiter grants `count` bytes.
    ///
    /// - Throws: `CancellationError` when the task is cancelled while waiting.
    func acquire(_ count: Int) async throws {
        for (limiter, flow) in zip(limiters, flows) {
            try await limiter.acquire(count, flow: flow)
        }
    }

    /// Takes `count` bytes from every limiter without waiting; `false` leaves a pending request
    /// for ``whenGranted(_:)``.
    func tryTake(_ count: Int) -> Bool {
        credits.withLock { credits -> Bool in
            for index in limiters.indices where credits.granted[index] < count {
                if limiters[index].tryAcquire(count, flow: flows[index]) {
                    credits.granted[index] += count
                } else {
                    credits.pending = (index, count)
                    return false
                }
            }
            for index in credits.granted.indices { credits.granted[index] -= count }
            return true
        }
    }

    /// Calls `callback` once the request ``tryTake(_:)`` refused is granted (at once if none is
    /// pending): the same bytes offered again are then taken.
    func whenGranted(_ callback: @escaping @Sendable () -> Void) {
        guard let pending = credits.withLock({ credits in
            defer { credits.pending = nil }
            return credits.pending
        }) else {
            callback()
            return
        }
        grant(from: pending.index, bytes: pending.bytes, then: callback)
    }

    /// Asks limiter `index` and the ones after it for `bytes`, then calls `callback`.
    private func grant(from index: Int, bytes: Int, then callback: @escaping @Sendable () -> Void) {
        guard index < limiters.count else {
            callback()
            return
        }
        if credits.withLock({ $0.granted[index] >= bytes }) {
            grant(from: index + 1, bytes: bytes, then: callback)
            return
        }
        limiters[index].acquire(bytes, flow: flows[index]) { [self] in
            credits.withLock { $0.granted[index] += bytes }
            grant(from: index + 1, bytes: bytes, then: callback)
        }
    }

    /// Forgets this transfer's flows in the limiters, when it ends.
    func end() {
        for (limiter, flow) in zip(limiters, flows) { limiter.endFlow(flow) }
    }
}
