import Foundation
import Synchronization

/// A bandwidth limit shared by transfers of every transport: a token bucket that starts empty
/// and grants each request against a debt repaid at the rate (so no byte is free and a late
/// wake-up loses no time), served in fair order so that concurrent transfers share it in bytes.
///
/// Transfers wait by suspending (async transports) or by being paused and called back
/// (transports driven by C callbacks); no thread sleeps. The limit can change at any time and
/// applies at once to running transfers. ``statistics`` tells what it achieved.
public final class BandwidthLimiter: Sendable {
    /// What the limiter did so far.
    public struct Statistics: Sendable, Hashable, Codable {
        /// The current limit in bytes per second (`nil`: unlimited).
        public var limit: Int64?
        /// Bytes granted since the limiter was made.
        public var bytesGranted: Int64
        /// Bytes per second granted over the last two seconds.
        public var achievedRate: Double
        /// Total time during which at least one transfer waited for the limiter.
        public var secondsThrottled: Double
    }

    private enum Wake: Sendable {
        case continuation(CheckedContinuation<Void, any Error>)
        case callback(@Sendable () -> Void)

        func fire() {
            switch self {
            case .continuation(let continuation): continuation.resume()
            case .callback(let callback): callback()
            }
        }
    }

    private struct State {
        var bucket: TokenBucket
        var queue: [TokenBucket.Waiter<Entry>] = []
        var driving = false
        /// Which driver is the current one: a rate change starts a new driver (the one asleep
        /// may sleep for the old rate's wait), and an older one ends when it wakes.
        var driver = 0
        var bytesGranted: Int64 = 0
        var throttledSince: Double?
        var secondsThrottled: Double = 0
        /// (second, bytes granted during it) for the last few seconds.
        var recent: [(second: Int64, bytes: Int64)] = []

        mutating func record(_ bytes: Int, now: Double) {
            bytesGranted += Int64(bytes)
            let second = Int64(now.rounded(.down))
            if recent.last?.second == second {
                recent[recent.count - 1].bytes += Int64(bytes)
            } else {
                recent.append((second, Int64(bytes)))
                if recent.count > 4 { recent.removeFirst(recent.count - 4) }
            }
        }

        mutating func updateThrottled(now: Double) {
            if queue.isEmpty, let since = throttledSince {
                secondsThrottled += now - since
                throttledSince = nil
            } else if !queue.isEmpty, throttledSince == nil {
                throttledSince = now
            }
        }
    }

    private struct Entry: Sendable {
        var id: UInt64
        var wake: Wake
    }

    private let state: Mutex<State>
    private let clock: any LibraryClock
    private let nextID = Atomic<UInt64>(1)
    private let unlimited = Atomic<Bool>(true)

    /// Creates a limiter.
    ///
    /// - Parameters:
    ///   - bytesPerSecond: the limit; `nil` for unlimited.
    ///   - clock: where time comes from and the refill waits (tests pass PaperboyTesting's `TestClock`).
    public init(bytesPerSecond: Int64? = nil, clock: any LibraryClock = SystemClock()) {
        self.clock = clock
        state = Mutex(State(bucket: TokenBucket(rate: bytesPerSecond, now: clock.uptimeSeconds)))
        unlimited.store(bytesPerSecond == nil, ordering: .relaxed)
    }

    /// The current limit in bytes per second (`nil`: unlimited).
    public var bytesPerSecond: Int64? { state.withLock { $0.bucket.rate } }

    /// Changes the limit; running transfers follow at once.
    public func setBytesPerSecond(_ rate: Int64?) {
        let now = clock.uptimeSeconds
        let woken = state.withLock { state -> [Wake] in
            state.bucket.setRate(rate.map { max(1, $0) }, now: now)
            unlimited.store(rate == nil, ordering: .relaxed)
            if rate == nil {
                let all = state.queue.map(\.token.wake)
                for waiter in state.queue { state.record(waiter.bytes, now: now) }
                state.queue.removeAll()
                state.updateThrottled(now: now)
                return all
            }
            return []
        }
        for wake in woken { wake.fire() }
        if rate != nil { drive(afterRateChange: true) }
    }

    /// How many requests wait for tokens now: a test stepping a test clock moves it only once
    /// every running transfer waits here (then each step's grants are the limiter's alone).
    package var waitingRequests: Int { state.withLock { $0.queue.count } }

    /// What the limiter achieved so far.
    public var statistics: Statistics {
        let now = clock.uptimeSeconds
        return state.withLock { state in
            let second = Int64(now.rounded(.down))
            let window = state.recent.filter { $0.second >= second - 2 && $0.second < second }
            var throttled = state.secondsThrottled
            if let since = state.throttledSince { throttled += now - since }
            return Statistics(
                limit: state.bucket.rate, bytesGranted: state.bytesGranted,
                achievedRate: Double(window.reduce(0) { $0 + $1.bytes }) / 2, secondsThrottled: throttled)
        }
    }

    /// A new flow identifier: pass the same one for every request of one transfer, so that
    /// transfers share the limit fairly in bytes.
    public func makeFlow() -> UInt64 {
        nextID.wrappingAdd(1, ordering: .relaxed).oldValue
    }

    /// Forgets a transfer's flow when it ends.
    public func endFlow(_ flow: UInt64) {
        state.withLock { $0.bucket.forget(flow: flow) }
    }

    /// Waits until `bytes` may be written, in fair slices.
    ///
    /// - Parameters:
    ///   - bytes: how many bytes the transfer is about to write.
    ///   - flow: the transfer asking (from ``makeFlow()``); `0` for an anonymous one.
    /// - Throws: `CancellationError` if the task is cancelled while waiting.
    public func acquire(_ bytes: Int, flow: UInt64 = 0) async throws {
        if unlimited.load(ordering: .relaxed) {
            state.withLock { $0.record(bytes, now: clock.uptimeSeconds) }
            return
        }
        var remaining = bytes
        while remaining > 0 {
            let slice = min(remaining, state.withLock { $0.bucket.quantum })
            try await acquireSlice(slice, flow: flow)
            remaining -= slice
        }
    }

    private func acquireSlice(_ bytes: Int, flow: UInt64) async throws {
        if tryAcquire(bytes, flow: flow) { return }
        let id = nextID.wrappingAdd(1, ordering: .relaxed).oldValue
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                if Task.isCancelled {
                    continuation.resume(throwing: CancellationError())
                    return
                }
                enqueue(bytes, flow: flow, Entry(id: id, wake: .continuation(continuation)))
            }
        } onCancel: {
            let removed = state.withLock { state -> Wake? in
                guard let index = state.queue.firstIndex(where: { $0.token.id == id }) else { return nil }
                let waiter = state.queue.remove(at: index)
                state.updateThrottled(now: clock.uptimeSeconds)
                return waiter.token.wake
            }
            if case .continuation(let continuation)? = removed { continuation.resume(throwing: CancellationError()) }
        }
    }

    /// Takes `bytes` without waiting, if the limit allows it now and nobody waits before.
    public func tryAcquire(_ bytes: Int, flow: UInt64 = 0) -> Bool {
        let now = clock.uptimeSeconds
        return state.withLock { state in
            if state.bucket.rate == nil || (state.queue.isEmpty && state.bucket.take(bytes, now: now)) {
                if state.bucket.rate != nil {
                    // Count it in the flow's virtual time, as if it had been queued.
                    var waiter = TokenBucket.Waiter(bytes: bytes, token: ())
                    state.bucket.tag(&waiter, flow: flow)
                }
                state.record(bytes, now: now)
                return true
            }
            return false
        }
    }

    /// Queues a request for `bytes` and calls `callback` once they are granted (already taken).
    public func acquire(_ bytes: Int, flow: UInt64 = 0, then callback: @escaping @Sendable () -> Void) {
        if tryAcquire(bytes, flow: flow) {
            callback()
            return
        }
        let id = nextID.wrappingAdd(1, ordering: .relaxed).oldValue
        enqueue(bytes, flow: flow, Entry(id: id, wake: .callback(callback)))
    }

    private func enqueue(_ bytes: Int, flow: UInt64, _ entry: Entry) {
        let now = clock.uptimeSeconds
        let immediate = state.withLock { state -> Bool in
            if state.bucket.rate == nil {
                state.record(bytes, now: now)
                return true
            }
            var waiter = TokenBucket.Waiter(bytes: bytes, token: entry)
            state.bucket.tag(&waiter, flow: flow)
            state.queue.append(waiter)
            state.updateThrottled(now: now)
            return false
        }
        if immediate {
            entry.wake.fire()
        } else {
            drive()
        }
    }

    /// Grants waiters as tokens accrue; one driver at a time, sleeping between grants.
    private func drive(afterRateChange: Bool = false) {
        let driver = state.withLock { state -> Int? in
            if afterRateChange, state.driving {
                // The driver asleep computed its wait at the old rate: a new one takes over.
                state.driver += 1
                state.driving = false
            }
            if state.driving || state.queue.isEmpty { return nil }
            state.driving = true
            return state.driver
        }
        guard let driver else { return }
        Task.detached { [self] in
            while true {
                let now = clock.uptimeSeconds
                let turn = state.withLock { state -> ([TokenBucket.Waiter<Entry>], Double?)? in
                    guard state.driver == driver else { return nil }
                    let result = state.bucket.grant(&state.queue, now: now)
                    for waiter in result.granted { state.record(waiter.bytes, now: now) }
                    state.updateThrottled(now: now)
                    if result.wait == nil { state.driving = false }
                    return result
                }
                guard let (granted, wait) = turn else { return }
                for waiter in granted { waiter.token.wake.fire() }
                guard let wait else { return }
                try? await clock.sleep(seconds: wait)
            }
        }
    }
}
