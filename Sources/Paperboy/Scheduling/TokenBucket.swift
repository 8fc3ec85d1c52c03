/// The arithmetic of the bandwidth limiter, without clocks or tasks, so it can be tested on
/// simulated time.
///
/// Requests are granted as tokens accrue, in the order of start-time fair queuing: each
/// transfer (a *flow*) has a virtual clock advanced by the bytes it was granted, and the request
/// with the earliest virtual start goes first. A transfer writing 16 KiB chunks is therefore
/// served four times for each 64 KiB slice of another: N transfers each get about 1/N of the
/// rate in bytes, whatever their chunk sizes. Requests are cut to at most ``quantum`` bytes.
struct TokenBucket {
    /// Bytes per second; `nil` is unlimited.
    private(set) var rate: Int64?
    /// Tokens available (bytes), at most ``burst``.
    private(set) var tokens: Double
    private(set) var lastRefill: Double
    /// The largest single grant; requests are cut to this size.
    let quantum: Int

    struct Waiter<Token> {
        var bytes: Int
        var token: Token
        /// The virtual start tag (set by ``tag(_:flow:)``).
        var start: Double = 0
        var sequence: UInt64 = 0
    }

    /// Virtual time: the start tag of the last request granted.
    private(set) var virtualTime: Double = 0
    private var flowFinish: [UInt64: Double] = [:]
    private var sequence: UInt64 = 0

    /// Tags a request of `flow` before it is queued.
    mutating func tag<Token>(_ waiter: inout Waiter<Token>, flow: UInt64) {
        let start = max(virtualTime, flowFinish[flow] ?? 0)
        flowFinish[flow] = start + Double(waiter.bytes)
        waiter.start = start
        sequence += 1
        waiter.sequence = sequence
        if flowFinish.count > 4096 { flowFinish = flowFinish.filter { $0.value > virtualTime } }
    }

    /// Forgets a flow that ended.
    mutating func forget(flow: UInt64) {
        flowFinish[flow] = nil
    }

    init(rate: Int64?, now: Double, quantum: Int = 64 * 1024) {
        self.rate = rate
        self.quantum = quantum
        lastRefill = now
        tokens = 0
        tokens = burst
    }

    /// The most tokens that can accumulate: a small burst of about 20 ms, and never less than
    /// one quantum (or a grant could never happen).
    var burst: Double {
        guard let rate else { return .infinity }
        return max(Double(quantum), Double(rate) * 0.02)
    }

    mutating func refill(now: Double) {
        guard let rate else { return }
        if now > lastRefill {
            tokens = min(burst, tokens + (now - lastRefill) * Double(rate))
        }
        lastRefill = max(lastRefill, now)
    }

    mutating func setRate(_ newRate: Int64?, now: Double) {
        refill(now: now)
        rate = newRate
        lastRefill = now
        tokens = min(tokens, burst)
        if newRate == nil { tokens = 0 }
    }

    private static func earliest<Token>(_ queue: [Waiter<Token>]) -> Int? {
        queue.indices.min { (queue[$0].start, queue[$0].sequence) < (queue[$1].start, queue[$1].sequence) }
    }

    /// Tokens needed before granting `bytes`: a request larger than the burst is granted when
    /// the bucket is full and leaves a debt, so the average rate stays exact.
    private func needed(_ bytes: Int) -> Double {
        min(Double(bytes), burst)
    }

    /// Takes `bytes` now if there are enough tokens (and nobody waits before).
    mutating func take(_ bytes: Int, now: Double) -> Bool {
        guard rate != nil else { return true }
        refill(now: now)
        guard tokens >= needed(bytes) else { return false }
        tokens -= Double(bytes)
        return true
    }

    /// Grants as many queued requests as the tokens allow, in order.
    ///
    /// - Returns: the granted waiters, and the time to wait before the next one can be granted
    ///   (`nil` when the queue is empty).
    mutating func grant<Token>(_ queue: inout [Waiter<Token>], now: Double) -> (granted: [Waiter<Token>], wait: Double?) {
        guard let rate else {
            defer { queue.removeAll() }
            return (queue, nil)
        }
        refill(now: now)
        var granted: [Waiter<Token>] = []
        while let index = Self.earliest(queue), tokens >= needed(queue[index].bytes) {
            let waiter = queue.remove(at: index)
            tokens -= Double(waiter.bytes)
            virtualTime = max(virtualTime, waiter.start)
            granted.append(waiter)
        }
        guard let index = Self.earliest(queue) else { return (granted, nil) }
        let next = queue[index]
        let missing = needed(next.bytes) - tokens
        return (granted, max(missing / Double(max(rate, 1)), 0.0005))
    }
}
