import Foundation
import Testing
@testable import Paperboy
import PaperboyTesting

@Suite("Bandwidth", .timeLimit(.minutes(2)))
struct BandwidthTests {
    /// Simulates `transfers` transfers, each writing `chunk`-byte chunks as fast as the bucket
    /// allows, for `seconds` of simulated time; returns the bytes each got.
    func simulate(rate: Int64, transfers: Int, chunks: [Int], seconds: Double, step: Double = 0.001) -> [Int64] {
        var bucket = TokenBucket(rate: rate, now: 0)
        var queue: [TokenBucket.Waiter<Int>] = []
        var received = Array(repeating: Int64(0), count: transfers)
        var remainingInChunk = chunks
        func request(_ transfer: Int) {
            let slice = min(remainingInChunk[transfer], bucket.quantum)
            var waiter = TokenBucket.Waiter(bytes: slice, token: transfer)
            bucket.tag(&waiter, flow: UInt64(transfer + 1))
            queue.append(waiter)
        }
        for transfer in 0..<transfers { request(transfer) }
        var now = 0.0
        while now < seconds {
            let (granted, _) = bucket.grant(&queue, now: now)
            for waiter in granted {
                received[waiter.token] += Int64(waiter.bytes)
                remainingInChunk[waiter.token] -= waiter.bytes
                if remainingInChunk[waiter.token] == 0 { remainingInChunk[waiter.token] = chunks[waiter.token] }
                request(waiter.token)
            }
            now += step
        }
        return received
    }

    @Test func oneTransferGetsTheRateAccurately() {
        let received = simulate(rate: 20_000_000, transfers: 1, chunks: [1 << 20], seconds: 10)
        let error = abs(Double(received[0]) - 200_000_000) / 200_000_000
        #expect(error < 0.005, "error \(error * 100) %")
    }

    @Test func equalTransfersShareFairlyWhateverTheirChunkSizes() {
        // Chunk sizes of different transports: curl's 16 KiB, 512 KiB buffers, a file's 1 MiB.
        let received = simulate(rate: 20_000_000, transfers: 4, chunks: [16_384, 524_288, 1 << 20, 100_000], seconds: 10)
        let total = received.reduce(0, +)
        #expect(abs(Double(total) - 200_000_000) / 200_000_000 < 0.005)
        let spread = Double(received.min()!) / Double(received.max()!)
        #expect(spread >= 0.98, "per-transfer bytes \(received)")
    }

    @Test func aRateChangeAppliesAtOnce() {
        var bucket = TokenBucket(rate: 1_000_000, now: 0)
        var queue: [TokenBucket.Waiter<Int>] = []
        var got: Int64 = 0
        var now = 0.0
        while now < 2 {
            if now >= 1, bucket.rate == 1_000_000 { bucket.setRate(4_000_000, now: now) }
            if queue.isEmpty { queue.append(.init(bytes: 65_536, token: 0)) }
            let (granted, _) = bucket.grant(&queue, now: now)
            got += Int64(granted.reduce(0) { $0 + $1.bytes })
            now += 0.001
        }
        #expect(abs(Double(got) - 5_000_000) / 5_000_000 < 0.03, "\(got)")
    }

    @Test func aRequestLargerThanTheBurstIsGrantedWithADebt() {
        var bucket = TokenBucket(rate: 100_000, now: 0)
        var queue: [TokenBucket.Waiter<Int>] = [.init(bytes: 1 << 20, token: 0), .init(bytes: 1000, token: 1)]
        // It waits for half the burst (32 KiB at 100 kB/s), not for its size.
        #expect(bucket.grant(&queue, now: 0).wait == 32_768.0 / 100_000)
        let first = bucket.grant(&queue, now: 0.33)
        #expect(first.granted.map(\.token) == [0])
        // The debt of ~1 MB takes ~10 s to repay before the next grant.
        #expect((first.wait ?? 0) > 9)
    }

    /// Drives a bucket as ``BandwidthLimiter`` does, on simulated time: each transfer asks for
    /// its whole chunk (as callback transports do) again as soon as the previous one is granted,
    /// and the driver wakes `lateness` seconds after the wait the bucket asked for (a sleep
    /// always ends late). Returns the bytes each transfer got, and per second the bytes of all.
    func drive(rate: Int64, chunks: [Int], seconds: Double, lateness: Double) -> (bytes: [Int64], perSecond: [Int64]) {
        var bucket = TokenBucket(rate: rate, now: 0)
        var queue: [TokenBucket.Waiter<Int>] = []
        var received = Array(repeating: Int64(0), count: chunks.count)
        var perSecond = Array(repeating: Int64(0), count: Int(seconds.rounded(.up)))
        func request(_ transfer: Int) {
            var waiter = TokenBucket.Waiter(bytes: chunks[transfer], token: transfer)
            bucket.tag(&waiter, flow: UInt64(transfer + 1))
            queue.append(waiter)
        }
        for transfer in chunks.indices { request(transfer) }
        var now = 0.0
        while now < seconds {
            var (granted, wait) = bucket.grant(&queue, now: now)
            while !granted.isEmpty {
                for waiter in granted {
                    received[waiter.token] += Int64(waiter.bytes)
                    perSecond[Int(now)] += Int64(waiter.bytes)
                    request(waiter.token)
                }
                (granted, wait) = bucket.grant(&queue, now: now)
            }
            now += (wait ?? 0.001) + lateness
        }
        return (received, perSecond)
    }

    /// Jain's fairness index of `shares`: 1 when all are equal, 1/n when one has everything.
    func jain(_ shares: [Int64]) -> Double {
        let values = shares.map(Double.init)
        let sum = values.reduce(0, +)
        return sum * sum / (Double(values.count) * values.reduce(0) { $0 + $1 * $1 })
    }

    @Test func aLateDriverLosesNoTimeWithRequestsLargerThanTheBurst() {
        // The HTTP transport's 512 KiB pieces at 20 MB/s (burst 400 kB), the driver 0.5 ms late
        // each time: granting only on a full bucket lost the lateness of every wake-up (-1.9 %).
        let (bytes, perSecond) = drive(rate: 20_000_000, chunks: [512 * 1024], seconds: 10, lateness: 0.0005)
        let error = (Double(bytes[0]) - 200_000_000) / 200_000_000
        #expect(abs(error) < 0.005, "error \(error * 100) %")
        for (second, count) in perSecond.enumerated() {
            #expect(abs(Double(count) - 20_000_000) / 20_000_000 < 0.05, "second \(second): \(count) bytes")
        }
    }

    @Test func aLateDriverKeepsTheRateAtLowRatesToo() {
        // 1 MB/s, 64 KiB requests (the async transports' slices; burst = one quantum), 5 ms late.
        let (bytes, _) = drive(rate: 1_000_000, chunks: [64 * 1024], seconds: 20, lateness: 0.005)
        let error = (Double(bytes[0]) - 20_000_000) / 20_000_000
        #expect(abs(error) < 0.005, "error \(error * 100) %")
    }

    @Test func fourTransfersWithDifferentChunksShareFairlyWithALateDriver() {
        let (bytes, _) = drive(rate: 20_000_000, chunks: [16_384, 524_288, 1 << 20, 100_000], seconds: 10, lateness: 0.001)
        let total = bytes.reduce(0, +)
        #expect(abs(Double(total) - 200_000_000) / 200_000_000 < 0.005, "total \(total)")
        #expect(jain(bytes) >= 0.98, "per-transfer bytes \(bytes)")
    }

    @Test func aTransferAskingAgainAfterABatchGrantKeepsItsPlace() {
        // 8 ms late, the driver finds tokens for several requests and grants them together,
        // moving the virtual time past the 16 KiB transfer, which asks again only afterwards.
        // Started at the new virtual time, it fell far behind them (Jain's index 0.86).
        let (bytes, _) = drive(rate: 20_000_000, chunks: [16_384, 65_536, 65_536, 65_536], seconds: 10, lateness: 0.008)
        #expect(jain(bytes) >= 0.99, "per-transfer bytes \(bytes)")
    }

    @Test func theBucketStartsEmptySoNoByteIsFree() {
        // Nothing at once (a full bucket gave six 64 KiB requests); the rest follows the rate.
        var bucket = TokenBucket(rate: 20_000_000, now: 0)
        var queue = (0..<20).map { TokenBucket.Waiter(bytes: 65_536, token: $0) }
        #expect(bucket.grant(&queue, now: 0).granted.isEmpty)
        // By any time t, at most rate * t.
        var granted = 0
        for step in 1...20 {
            let now = Double(step) * 0.001
            granted += bucket.grant(&queue, now: now).granted.reduce(0) { $0 + $1.bytes }
            #expect(Double(granted) <= 20_000_000 * now, "\(granted) bytes at \(now) s")
        }
    }

    /// Moves `clock` to `seconds` of uptime (to the microsecond).
    func advance(_ clock: TestClock, to seconds: Double) {
        clock.advance(by: .microseconds(Int64((seconds * 1_000_000).rounded())) - clock.uptime)
    }

    @Test func tryAcquireChargesEachGrantAsADebtOnTheInjectedClock() {
        let clock = TestClock()
        let limiter = BandwidthLimiter(bytesPerSecond: 20_000_000, clock: clock)
        let piece = 512 * 1024
        // A piece larger than the burst (400 kB) waits for half of it (10 ms), and leaves a debt:
        // the next waits until the piece is paid for and half a burst is there again (+26.2 ms).
        #expect(!limiter.tryAcquire(piece, flow: 1))
        advance(clock, to: 0.0099)
        #expect(!limiter.tryAcquire(piece, flow: 1))
        advance(clock, to: 0.0100)
        #expect(limiter.tryAcquire(piece, flow: 1))
        advance(clock, to: 0.0362)
        #expect(!limiter.tryAcquire(piece, flow: 1))
        advance(clock, to: 0.0363)
        #expect(limiter.tryAcquire(piece, flow: 1))
        // Polled every 10 ms, so each grant comes up to 10 ms late: the lateness is kept as
        // tokens (up to the burst), so one second still gets 20 MB (less the first half burst),
        // give or take a piece. Waiting for a full bucket got a piece every 30 ms: 17.5 MB.
        var now = 0.0363
        while now < 1 {
            now += 0.010
            advance(clock, to: now)
            while limiter.tryAcquire(piece, flow: 1) {}
        }
        let expected = 20_000_000 * now - 200_000
        let granted = Double(limiter.statistics.bytesGranted)
        #expect(granted >= expected - Double(piece) && granted <= expected + Double(piece), "\(granted) bytes in \(now) s")
        #expect(clock.sleeperCount == 0, "tryAcquire never waits")
    }

    /// Waiting transfers are woken by the limiter's driver, which sleeps on the limiter's clock
    /// until the tokens are there: on a test clock, the grants follow the rate exactly.
    @Test func waitingTransfersAreGrantedAtTheRateOnTheLimitersClock() async throws {
        let clock = TestClock()
        let rate: Int64 = 2_000_000
        let limiter = BandwidthLimiter(bytesPerSecond: rate, clock: clock)
        let total = 1_500_000
        let transfers = (1...3).map { flow in
            Task { try await limiter.acquire(total / 3, flow: UInt64(flow)) }
        }
        var wakes = 0
        while limiter.statistics.bytesGranted < Int64(total) {
            // The driver asleep, or the last bytes granted.
            try await eventually("the limiter's driver asleep", seen: "\(limiter.statistics)") {
                clock.sleeperCount > 0 || limiter.statistics.bytesGranted == Int64(total)
            }
            // Never ahead of the rate by more than the slice being repaid: the bucket starts
            // empty, so no byte is free.
            let granted = Double(limiter.statistics.bytesGranted)
            #expect(granted <= Double(rate) * clock.uptimeSeconds + 65_536, "\(granted) bytes at \(clock.uptime)")
            guard let step = clock.advanceToNextDeadline() else { break }
            wakes += 1
            #expect(step > .zero, "the driver slept for nothing")
        }
        for transfer in transfers { try await transfer.value }
        let elapsed = clock.uptimeSeconds
        // 1.5 MB at 2 MB/s, granted against a debt: the last slice comes within a slice's time
        // (64 KiB, 33 ms) of the ideal 0.75 s.
        #expect(elapsed >= 0.75 - 0.033 && elapsed <= 0.75 + 0.001, "\(elapsed) s, \(wakes) wakes")
        #expect(limiter.statistics.bytesGranted == Int64(total))
        #expect(abs(limiter.statistics.secondsThrottled - elapsed) < 0.001, "\(limiter.statistics)")
    }

    /// A raised limit reaches a transfer already waiting at the old rate: the driver, asleep for
    /// the old rate's wait, is replaced by one that sleeps for the new rate's (a SIGHUP from
    /// 100 kB/s to 20 MB/s took up to 5 s to show before).
    @Test func aRaisedLimitWakesAWaitingTransferAtTheNewRate() async throws {
        let clock = TestClock()
        let limiter = BandwidthLimiter(bytesPerSecond: 10_000, clock: clock)
        let transfer = Task { try await limiter.acquire(65_536) }
        try await eventually("the driver asleep for the low rate", seen: "\(clock.pendingSleeps)") { clock.sleeperCount > 0 }
        #expect(clock.pendingSleeps.allSatisfy { $0 > .seconds(1) }, "\(clock.pendingSleeps)")
        limiter.setBytesPerSecond(10_000_000)
        // 64 KiB at 10 MB/s is 6.6 ms, not the 6.6 s of the old rate.
        try await eventually("a driver asleep for the new rate", seen: "\(clock.pendingSleeps)") {
            clock.pendingSleeps.contains { $0 < .milliseconds(10) }
        }
        // The request's slices are granted at the new rate, one short sleep each (the old
        // driver's long sleep is never the next deadline).
        while limiter.statistics.bytesGranted < 65_536 {
            let step = try #require(clock.advanceToNextDeadline())
            #expect(step < .milliseconds(10), "\(clock.pendingSleeps)")
            try await eventually("the next slice granted or asked for", seen: "\(limiter.statistics) \(clock.pendingSleeps)") {
                limiter.statistics.bytesGranted == 65_536 || clock.pendingSleeps.contains { $0 < .milliseconds(10) }
            }
        }
        try await transfer.value
        #expect(clock.uptimeSeconds < 0.01, "\(clock.uptimeSeconds) s")
    }

    @Test func theLimiterIsUnlimitedByDefaultAndCountsBytes() async throws {
        let limiter = BandwidthLimiter()
        try await limiter.acquire(1_000_000)
        #expect(limiter.tryAcquire(5))
        #expect(limiter.statistics.bytesGranted == 1_000_005)
        #expect(limiter.statistics.limit == nil)
    }

    /// A transport shaped like a C-callback one: `tryWrite`, and a pause until `whenWritable`.
    struct CallbackStyleTransport: Transport {
        let data: Data
        let pauses = PauseCounter()
        var schemes: Set<String> { ["cb"] }
        var capabilities: TransportCapabilities { [.resume] }
        func transfer(_ job: TransferJob, into sink: any TransferSink) async throws {
            try sink.begin(TransferResponse(offset: 0, expectedLength: Int64(data.count), validator: nil))
            var position = 0
            while position < data.count {
                let end = min(position + 100_000, data.count)
                let taken = try data[position..<end].withUnsafeBytes { try sink.tryWrite($0) }
                if taken {
                    position = end
                } else {
                    pauses.increment()
                    await withCheckedContinuation { continuation in sink.whenWritable { continuation.resume() } }
                }
            }
        }
    }

    final class PauseCounter: @unchecked Sendable {
        private let lock = NSLock()
        private var count = 0
        func increment() { lock.withLock { count += 1 } }
        var value: Int { lock.withLock { count } }
    }

    @Test func callbackTransportsArePausedAndResumed() async throws {
        let folder = TempFolder()
        let data = randomData(1_000_000)
        let transport = CallbackStyleTransport(data: data)
        var configuration = Library.Configuration.forTests()
        configuration.bandwidthLimit = 4_000_000
        let library = try Library.open(at: folder.file("lib"), transports: TransportRegistry([transport]), configuration: configuration)
        let asset = try await library.addIssue(name: "i", date: Date()).addAsset(AssetRequest(url: URL(string: "cb://host/x")!))
        let delegate = RecordingDelegate()
        try await asset.download(delegate: delegate)
        await delegate.waitForEnd()
        #expect(delegate.keptFiles == [data])
        #expect(transport.pauses.value > 0)
        await library.close()
    }

    @Test func scheduleBoundariesIncludingMidnight() throws {
        let utc = TimeZone(identifier: "UTC")!
        let schedule = BandwidthSchedule([
            .init(minuteOfDay: 19 * 60, bytesPerSecond: 10_000_000),
            .init(minuteOfDay: 8 * 60, bytesPerSecond: 1_000_000),
            .init(minuteOfDay: 23 * 60, bytesPerSecond: nil),
        ], timeZone: utc)
        func at(_ text: String) -> Date { try! Date(text, strategy: .iso8601) }
        #expect(schedule.bytesPerSecond(at: at("2026-11-21T07:59:59Z")) == nil)      // still 23:00's "off"
        #expect(schedule.bytesPerSecond(at: at("2026-11-21T08:00:00Z")) == 1_000_000)
        #expect(schedule.bytesPerSecond(at: at("2026-11-21T18:59:00Z")) == 1_000_000)
        #expect(schedule.bytesPerSecond(at: at("2026-11-21T19:00:00Z")) == 10_000_000)
        #expect(schedule.bytesPerSecond(at: at("2026-11-21T23:30:00Z")) == nil)
        #expect(schedule.bytesPerSecond(at: at("2026-11-22T00:10:00Z")) == nil)
        #expect(schedule.nextChange(after: at("2026-11-21T12:00:00Z")) == at("2026-11-21T19:00:00Z"))
        #expect(schedule.nextChange(after: at("2026-11-21T23:30:00Z")) == at("2026-11-22T08:00:00Z"))
        let night = BandwidthSchedule([.init(minuteOfDay: 22 * 60, bytesPerSecond: 5), .init(minuteOfDay: 6 * 60, bytesPerSecond: 1)], timeZone: utc)
        #expect(night.bytesPerSecond(at: at("2026-11-21T02:00:00Z")) == 5)
        #expect(BandwidthSchedule([]).bytesPerSecond(at: Date()) == nil)
        #expect(BandwidthSchedule([]).nextChange(after: Date()) == nil)
    }
}

/// Rates really measured through a library, in real time: lower bounds, which a loaded machine
/// cannot break (it only makes transfers slower). The exact decisions are `Bandwidth`'s, on a
/// test clock.
@Suite("Bandwidth measured in real time", .serialized, .timeLimit(.minutes(2)))
struct BandwidthRealTimeTests {
    @Test func aLimitedDownloadCannotBeFasterThanTheLimit() async throws {
        let folder = TempFolder()
        let transport = InMemoryTransport(chunkSize: 256 * 1024)
        let data = randomData(1_500_000)
        let url = transport.serve(data, at: "limited")
        var configuration = Library.Configuration.forTests()
        configuration.bandwidthLimit = 2_000_000
        let library = try Library.open(at: folder.file("lib"), transports: TransportRegistry([transport]), configuration: configuration)
        let asset = try await library.addIssue(name: "i", date: Date()).addAsset(AssetRequest(url: url))
        let delegate = RecordingDelegate()
        let start = ContinuousClock.now
        try await asset.download(delegate: delegate)
        await delegate.waitForEnd()
        let elapsed = ContinuousClock.now - start
        #expect(delegate.keptFiles == [data])
        // 1.5 MB at 2 MB/s, minus the 64 KiB burst: at least 0.6 s whatever the machine.
        #expect(elapsed >= .milliseconds(600), "took \(elapsed)")
        let statistics = library.bandwidthLimiter.statistics
        #expect(statistics.bytesGranted == Int64(data.count))
        #expect(statistics.secondsThrottled > 0.3)
        await library.close()
    }

    @Test func aPerAssetLimitAppliesUnderTheGlobalOne() async throws {
        let folder = TempFolder()
        let transport = InMemoryTransport(chunkSize: 64 * 1024)
        let slow = transport.serve(randomData(600_000, seed: 1), at: "slow")
        let fast = transport.serve(randomData(600_000, seed: 2), at: "fast")
        var configuration = Library.Configuration.forTests()
        configuration.bandwidthLimit = 50_000_000
        let library = try Library.open(at: folder.file("lib"), transports: TransportRegistry([transport]), configuration: configuration)
        let issue = try await library.addIssue(name: "i", date: Date())
        let slowAsset = try await issue.addAsset(AssetRequest(url: slow, maxBytesPerSecond: 1_000_000))
        let fastAsset = try await issue.addAsset(AssetRequest(url: fast))
        let slowDelegate = RecordingDelegate()
        let fastDelegate = RecordingDelegate()
        let start = ContinuousClock.now
        try await slowAsset.download(delegate: slowDelegate)
        try await fastAsset.download(delegate: fastDelegate)
        await fastDelegate.waitForEnd()
        let fastTime = ContinuousClock.now - start
        await slowDelegate.waitForEnd()
        let slowTime = ContinuousClock.now - start
        // 600 kB at 1 MB/s (minus one quantum of burst) takes at least 0.45 s; the other is not held back by it.
        #expect(slowTime >= .milliseconds(450))
        #expect(fastTime < slowTime)
        await library.close()
    }
}
