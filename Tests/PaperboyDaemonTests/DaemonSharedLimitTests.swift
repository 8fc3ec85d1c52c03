import Foundation
import Paperboy
import PaperboyDaemon
import PaperboyTestServers
import PaperboyTesting
import Testing

/// docs/Daemon.md: the daemon's `[bandwidth] limit` is one limiter for every client. Two clients,
/// each on its own connection, start a transfer each; the library's limiter runs on a
/// ``TestClock`` that the test moves one grant at a time, so what each client got in each
/// simulated second is exact, whatever the machine's load. (The same in real time, from nginx
/// through `paperboy daemon`, is a benchmark: `Benchmarks/bandwidth/run.py --daemon`.)
@Suite("The daemon's one bandwidth limit, on a test clock", .timeLimit(.minutes(2)))
struct DaemonSharedLimitTests {
    let home = DaemonHome()
    /// 1 MiB/s in 64 KiB requests (the in-memory transport's chunks, the limiter's quantum): a
    /// grant every 1/16 s, at 1/32 + k/16 s, never on a whole second.
    static let limit: Int64 = 1 << 20
    static let chunk: Int64 = 64 * 1024
    static let seconds = 4

    /// Adds an issue named `name` and an asset of `data`, started at once; returns the asset's id.
    func start(_ client: WireClient, _ name: String, _ data: Data) async throws -> String {
        let url = home.transport.serve(data, at: "\(name).bin")
        let issue = try await client.request("ADDISSUE", #"{"id":1,"name":"\#(name)","date":"2026-11-21T00:00:00Z"}"#)
        #expect(issue.kind == "OK", "\(WireClient.describe(issue))")
        let added = try await client.request("ADDASSET", #"""
            {"id":2,"issue":"\#(name)","request":{"url":"\#(url.absoluteString)","destination_path":"\#(name).bin"},"download":true}
            """#)
        return try #require((json(added)["asset"] as? JSON)?["id"] as? String, "ADDASSET answered \(WireClient.describe(added))")
    }

    /// The asset's `total_bytes_written`, as its client asks for it (`STATUS`).
    func written(_ client: WireClient, _ asset: String, id: Int) async throws -> Int64 {
        let status = try await client.request("STATUS", #"{"id":\#(id),"asset":"\#(asset)"}"#)
        let bytes = (json(status)["asset"] as? JSON)?["total_bytes_written"] as? Int
        return Int64(try #require(bytes, "STATUS answered \(WireClient.describe(status))"))
    }

    /// With one limiter for both, each simulated second grants the limit once, 16 requests, and
    /// start-time fair queuing alternates them: 8 to each client. A limiter per client (or per
    /// connection) would grant each of them the whole limit.
    @Test func twoClientsShareOneLimitHalfAndHalfInEverySimulatedSecond() async throws {
        let clock = TestClock()
        // More than either transfer gets in the measured seconds: both run to the end.
        let data = try await generated(Int(Self.limit) * Self.seconds, seed: 21)
        try await home.withDaemon(configure: { configuration in
            configuration.clock = clock
            configuration.bandwidthLimit = Self.limit
        }) { daemon in
            let clients = [try await WireClient.negotiated(home.socket), try await WireClient.negotiated(home.socket)]
            let assets = [try await start(clients[0], "a", data), try await start(clients[1], "b", data)]
            let limiter = daemon.library.bandwidthLimiter

            // Time moves only once both transfers wait for the limiter and everything that sleeps
            // on the clock (the limiter's driver, the statistics recorder) sleeps: then a step's
            // grants are decided by the limiter alone, not by which task the machine ran first.
            var bytes: [[Int64]] = [[0, 0]]
            while bytes.count <= Self.seconds {
                try await eventually("both transfers to wait for the limiter, its driver and the statistics recorder asleep",
                                     seen: "\(limiter.waitingRequests) waiting at \(clock.uptime), sleeps due in \(clock.pendingSleeps)") {
                    limiter.waitingRequests == 2 && clock.sleeperCount == 2
                }
                if clock.uptime == .seconds(bytes.count) {
                    let id = 10 + bytes.count
                    bytes.append([try await written(clients[0], assets[0], id: id), try await written(clients[1], assets[1], id: id)])
                }
                clock.advanceToNextDeadline()
            }
            let perSecond = (1...Self.seconds).map { second in zip(bytes[second], bytes[second - 1]).map { $0 - $1 } }
            print("daemon, two clients under \(Self.limit) B/s on a test clock, bytes per simulated second: \(perSecond)")
            for (second, granted) in zip(1..., perSecond) {
                #expect(granted.reduce(0, +) == Self.limit, "second \(second): \(granted) bytes, not one limit for both")
                #expect(granted == [Self.limit / 2, Self.limit / 2], "second \(second): \(granted) bytes, not half each")
            }
            for client in clients { client.disconnect() }
        }
    }
}
