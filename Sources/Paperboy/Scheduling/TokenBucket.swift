/// The arithmetic of the bandwidth limiter, without clocks or tasks, so it can be tested on
/// simulated time.
///
/// Requests wait in one first-in-first-out queue and are granted in order as tokens accrue.
/// A transfer asks for at most ``quantum`` bytes at a time and queues again for the rest, so
/// concurrent transfers are served round-robin in equal slices: N equal transfers each get
/// about 1/N of the rate, whatever their chunk sizes.
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
        var index = 0
        while index < queue.count, tokens >= needed(queue[index].bytes) {
            tokens -= Double(queue[index].bytes)
            granted.append(queue[index])
            index += 1
        }
        queue.removeFirst(index)
        guard let next = queue.first else { return (granted, nil) }
        let missing = needed(next.bytes) - tokens
        return (granted, max(missing / Double(max(rate, 1)), 0.0005))
    }
}
