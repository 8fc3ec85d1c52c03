#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing
@testable import Paperboy
import PaperboyTestServers
import PaperboyTesting

/// The Linux monitor hears of network changes from the kernel (rtnetlink) instead of polling.
@Suite("Network changes through netlink", .serialized, .timeLimit(.minutes(2)))
struct NetlinkWatchTests {
    /// `ip`, when this process may change routes (root with CAP_NET_ADMIN, as in CI containers).
    static let ip: String? = geteuid() == 0 ? ["/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"].first { access($0, X_OK) == 0 } : nil

    /// A fake `/proc/net/route` whose default route goes through `interface`.
    func writeRoute(_ proc: URL, defaultInterface interface: String) throws {
        try FileManager.default.createDirectory(at: proc.appendingPathComponent("net"), withIntermediateDirectories: true)
        let route = "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n"
            + "\(interface)\t00000000\t010200C0\t0003\t0\t0\t100\t00000000\t0\t0\t0\n"
        try route.write(to: proc.appendingPathComponent("net/route"), atomically: true, encoding: .utf8)
    }

    func run(_ ip: String, _ arguments: [String]) async throws -> Int32 {
        let child = try ChildProcess(ip, arguments)
        await child.exited()
        return child.terminationStatus
    }

    @Test func theMonitorOpensANetlinkSocketAndDoesNotPoll() throws {
        let folder = TempFolder()
        try writeRoute(folder.file("proc"), defaultInterface: "eth0")
        let monitor = LinuxNetworkMonitor(procRoot: folder.file("proc"), sysRoot: folder.file("sys"), interval: .seconds(3600),
                                          isMetered: { _ in false })
        _ = monitor.changes()
        #expect(monitor.watchesNetlink)
    }

    @Test(.enabled(if: ip != nil, "needs root and ip(8) to add a route"))
    func aRouteChangeIsSeenWithinASecondWithoutPolling() async throws {
        let ip = try #require(Self.ip)
        let folder = TempFolder()
        let proc = folder.file("proc")
        try writeRoute(proc, defaultInterface: "eth0")
        // An hour between reads: only a netlink message can make the monitor read again.
        let monitor = LinuxNetworkMonitor(procRoot: proc, sysRoot: folder.file("sys"), interval: .seconds(3600),
                                          isMetered: { _ in false })
        #expect(monitor.current.interface == "eth0")
        let changes = monitor.changes()
        let seen = Task {
            for await status in changes where status.interface == "wlan9" { return true }
            return false
        }
        try writeRoute(proc, defaultInterface: "wlan9")
        // Writing the file is no netlink message: nothing reads it again until `ip` changes a route.
        #expect(monitor.current.interface == "eth0", "read again without a netlink message")
        // A route in TEST-NET-1 (RFC 5737) on the loopback interface: harmless, removed below.
        #expect(try await run(ip, ["route", "add", "192.0.2.201/32", "dev", "lo"]) == 0)
        // From the moment `ip` has made the change (its start-up under load is not ours).
        let started = ContinuousClock.now
        defer { _ = try? ChildProcess(ip, ["route", "del", "192.0.2.201/32", "dev", "lo"]).waitUntilExit() }
        try await eventually("the route change read", seen: "\(monitor.current)") { monitor.current.interface == "wlan9" }
        let took = ContinuousClock.now - started
        print("netlink: route change seen in \(took)")
        // Read again well before the hour between reads: only the netlink message can have made
        // the monitor read (the watcher settles 100 ms after it; the time is printed, not bounded).
        #expect(took < .seconds(3600))
        // And announced to the subscribers.
        #expect(await seen.value)
        #expect(monitor.current.interface == "wlan9")
    }
}
