import Foundation
import Synchronization

/// Tells the scheduler which network the machine uses, and when that changes.
///
/// Replace it to run on other platforms, in tests, or to force a status (``FixedNetworkMonitor``).
public protocol NetworkMonitor: Sendable {
    /// The status now.
    var current: NetworkStatus { get }
    /// Every change from now on (not the current status).
    func changes() -> AsyncStream<NetworkStatus>
}

/// A monitor whose status is set by hand: for tests, and for operators who say what the network
/// is (`PAPERBOY_NETWORK=cellular,expensive`, `[network] assume`).
public final class FixedNetworkMonitor: NetworkMonitor {
    private let state: Mutex<(status: NetworkStatus, subscribers: [Int: AsyncStream<NetworkStatus>.Continuation], next: Int)>

    /// Creates a monitor reporting `status`.
    public init(_ status: NetworkStatus) {
        state = Mutex((status, [:], 0))
    }

    public var current: NetworkStatus { state.withLock { $0.status } }

    /// Changes the status and tells subscribers.
    public func set(_ status: NetworkStatus) {
        let subscribers = state.withLock { state -> [AsyncStream<NetworkStatus>.Continuation] in
            guard state.status != status else { return [] }
            state.status = status
            return Array(state.subscribers.values)
        }
        for subscriber in subscribers { subscriber.yield(status) }
    }

    public func changes() -> AsyncStream<NetworkStatus> {
        let (stream, continuation) = AsyncStream.makeStream(of: NetworkStatus.self)
        let key = state.withLock { state -> Int in
            state.next += 1
            state.subscribers[state.next] = continuation
            return state.next
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.subscribers.removeValue(forKey: key) }
        }
        return stream
    }
}

/// Reads the Linux network state: the default-route interface from `/proc/net/route`, its
/// class from sysfs (`wireless` or `phy80211` → wifi, `DEVTYPE=wwan` → cellular, Ethernet →
/// wired, anything else → other), and whether it is metered from NetworkManager when `nmcli`
/// is installed (otherwise not expensive).
///
/// It reads again when the kernel announces a link, address or route change (rtnetlink, see
/// ``NetlinkRouteWatcher``), and every ``fallbackInterval`` besides (NetworkManager's metered
/// flag changes without one); where no netlink socket can be opened, it reads every
/// `interval` instead.
package final class LinuxNetworkMonitor: NetworkMonitor {
    /// How often the state is read again when netlink announces changes.
    package static let fallbackInterval = Duration.seconds(60)

    private let procRoot: URL
    private let sysRoot: URL
    private let interval: Duration
    private let meteredLookup: @Sendable (String) -> Bool
    private let fixed = FixedNetworkMonitor(NetworkStatus(kind: .none))
    private let poller = Mutex<Task<Void, Never>?>(nil)
    private let watcher = Mutex<NetlinkRouteWatcher?>(nil)

    /// Creates a monitor.
    ///
    /// - Parameters:
    ///   - procRoot: where `net/route` is (tests pass a fake tree).
    ///   - sysRoot: where `class/net` is.
    ///   - interval: how often to look again where netlink cannot tell (``fallbackInterval``
    ///     when it can, or `interval` if longer).
    ///   - isMetered: whether an interface is metered (default: ask `nmcli` when it exists).
    package init(procRoot: URL = URL(fileURLWithPath: "/proc"), sysRoot: URL = URL(fileURLWithPath: "/sys"),
                interval: Duration = .seconds(3), isMetered: (@Sendable (String) -> Bool)? = nil) {
        self.procRoot = procRoot
        self.sysRoot = sysRoot
        self.interval = interval
        meteredLookup = isMetered ?? LinuxNetworkMonitor.nmcliMetered
        fixed.set(read())
    }

    deinit {
        poller.withLock { $0?.cancel() }
        watcher.withLock { $0?.stop() }
    }

    /// Whether changes are announced by netlink (otherwise the monitor polls every `interval`).
    package var watchesNetlink: Bool { watcher.withLock { $0 != nil } }

    package var current: NetworkStatus { fixed.current }

    package func changes() -> AsyncStream<NetworkStatus> {
        let watching = watcher.withLock { watcher -> Bool in
            if watcher == nil {
                watcher = NetlinkRouteWatcher(fallback: max(interval, Self.fallbackInterval)) { [weak self] in
                    guard let self else { return }
                    self.fixed.set(self.read())
                }
            }
            return watcher != nil
        }
        // A change between the first read and the watcher's start would wait for the fallback.
        if watching { fixed.set(read()) }
        poller.withLock { poller in
            guard poller == nil, !watching else { return }
            let interval = self.interval
            poller = Task { [weak self] in
                while !Task.isCancelled {
                    try? await Task.sleep(for: interval)
                    guard let self else { return }
                    self.fixed.set(self.read())
                }
            }
        }
        return fixed.changes()
    }

    /// Reads the status now.
    package func read() -> NetworkStatus {
        guard let interface = defaultRouteInterface() else { return NetworkStatus(kind: .none) }
        return NetworkStatus(kind: classify(interface), interface: interface, isExpensive: meteredLookup(interface))
    }

    /// The interface of the default route (destination 0.0.0.0 with the lowest metric).
    func defaultRouteInterface() -> String? {
        guard let text = try? String(contentsOf: procRoot.appendingPathComponent("net/route"), encoding: .utf8) else { return nil }
        var best: (name: String, metric: Int)?
        for line in text.split(separator: "\n").dropFirst() {
            let fields = line.split(whereSeparator: { $0 == "\t" || $0 == " " })
            guard fields.count >= 7, fields[1] == "00000000", let flags = Int(fields[3], radix: 16), flags & 0x1 != 0 else { continue }
            let metric = Int(fields[6]) ?? 0
            if best == nil || metric < best!.metric { best = (String(fields[0]), metric) }
        }
        return best?.name
    }

    /// The class of an interface, from sysfs.
    package func classify(_ interface: String) -> NetworkStatus.Kind {
        let folder = sysRoot.appendingPathComponent("class/net/\(interface)")
        let manager = FileManager.default
        if manager.fileExists(atPath: folder.appendingPathComponent("wireless").path)
            || manager.fileExists(atPath: folder.appendingPathComponent("phy80211").path) {
            return .wifi
        }
        let uevent = (try? String(contentsOf: folder.appendingPathComponent("uevent"), encoding: .utf8)) ?? ""
        if uevent.split(separator: "\n").contains("DEVTYPE=wwan") { return .cellular }
        if uevent.split(separator: "\n").contains(where: { $0.hasPrefix("DEVTYPE=") }) { return .other }
        let type = (try? String(contentsOf: folder.appendingPathComponent("type"), encoding: .utf8))?
            .trimmingCharacters(in: .whitespacesAndNewlines)
        // ARPHRD_ETHER with a real device behind it; virtual interfaces have no `device` link.
        if type == "1", manager.fileExists(atPath: folder.appendingPathComponent("device").path) { return .wired }
        return .other
    }

    /// NetworkManager's opinion (`GENERAL.METERED`), when `nmcli` exists and answers quickly.
    @Sendable static func nmcliMetered(_ interface: String) -> Bool {
        let candidates = ["/usr/bin/nmcli", "/bin/nmcli"]
        guard let nmcli = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else { return false }
        // Bounded: a NetworkManager that does not answer must not hold the monitor.
        let run = ChildRun(nmcli, ["-t", "-g", "GENERAL.METERED", "device", "show", interface],
                           environment: ProcessInfo.processInfo.environment, timeout: .seconds(2), outputLimit: 256)
        let (ending, data) = run.run()
        guard ending == .exited(0) else { return false }
        return String(decoding: data, as: UTF8.self).lowercased().hasPrefix("yes")
    }
}
