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
    /// The balance in bytes: at most ``burst``, negative while the last grant is being repaid.
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

    /// The largest request granted so far: how far behind the virtual time a flow may be and
    /// keep its place.
    private(set) var largestRequest = 0

    /// Tags a request of `flow` before it is queued.
    ///
    /// A flow keeps its own finish tag even if the virtual time moved past it, by up to
    /// ``largestRequest``: a transfer has one request at a time and asks again only once the last
    /// was granted, so when a late wake-up grants several requests at once, the virtual time
    /// jumps past a transfer that is about to ask again. Plain start-time fair queuing would
    /// start it at the new virtual time, and a transfer of 16 KiB requests lost a slice at each
    /// such jump (Jain's index 0.86 against three of 64 KiB, the driver 8 ms late); the credit a
    /// transfer can keep this way is bounded by the largest request.
    mutating func tag<Token>(_ waiter: inout Waiter<Token>, flow: UInt64) {
        let start = flowFinish[flow].map { max(virtualTime - Double(largestRequest), $0) } ?? virtualTime
        flowFinish[flow] = start + Double(waiter.bytes)
        waiter.start = start
        sequence += 1
        waiter.sequence = sequence
        if flowFinish.count > 4096 { flowFinish = flowFinish.filter { $0.value > virtualTime - Double(largestRequest) } }
    }

    /// Forgets a flow that ended.
    mutating func forget(flow: UInt64) {
        flowFinish[flow] = nil
    }

    init(rate: Int64?, now: Double, quantum: Int = 64 * 1024) {
        self.rate = rate
        self.quantum = quantum
        lastRefill = now
        // Empty: no byte is free (a full bucket at the start was 400 kB of extra bytes at
        // 20 MB/s).
        tokens = 0
    }

    /// The most tokens that can accumulate: about 20 ms of the rate, and never less than one
    /// quantum. Since a request waits for at most half of it (``needed(_:)``), a grant may come
    /// half a burst late (10 ms at 20 MB/s) without losing time: tokens accrue until the
    /// balance reaches the burst, whether the driver wakes on time or not.
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

    /// Tokens needed before granting `bytes`: the request's size, or half the burst for a larger
    /// one, which is granted with a debt that the next grant waits for, so the average rate is
    /// exact.
    ///
    /// Waiting for a full bucket (as this did before) whenever a request was larger than the
    /// burst (the HTTP transport's 512 KiB pieces at 20 MB/s) lost the lateness of every wake-up
    /// of the driver, since tokens stop at the burst: 1.5 % of the rate in all. Waiting for
    /// nothing (a pure debt) would let a large request take a slice whenever the balance is
    /// barely positive, before a transfer of small requests has asked again (Jain's index 0.84
    /// for 16 KiB against 512 KiB and 1 MiB requests); half the burst keeps both right.
    private func needed(_ bytes: Int) -> Double {
        min(Double(bytes), burst / 2)
    }

    /// Takes `bytes` now if there are enough tokens (and nobody waits before).
    mutating func take(_ bytes: Int, now: Double) -> Bool {
        guard rate != nil else { return true }
        refill(now: now)
        guard tokens >= needed(bytes) else { return false }
        tokens -= Double(bytes)
        largestRequest = max(largestRequest, bytes)
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
            largestRequest = max(largestRequest, waiter.bytes)
            granted.append(waiter)
        }
        guard let index = Self.earliest(queue) else { return (granted, nil) }
        let missing = needed(queue[index].bytes) - tokens
        return (granted, max(missing / Double(max(rate, 1)), 0.0005))
    }
}
