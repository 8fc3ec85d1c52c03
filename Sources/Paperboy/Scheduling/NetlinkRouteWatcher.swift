#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Synchronization

/// Calls back when the kernel announces a change of links, addresses or routes (rtnetlink
/// multicast groups on a `NETLINK_ROUTE` socket), so that ``LinuxNetworkMonitor`` reads the
/// network again when it changes instead of every few seconds.
///
/// One thread blocks in `poll(2)` on the socket and a stop pipe; a burst of messages (an
/// interface going up brings a link, addresses and routes) is coalesced into one call after
/// ``settle``. Without a message, it calls back every `fallback` anyway: NetworkManager's
/// metered flag changes without a route message. Messages are never parsed: their arrival is
/// the news, the monitor reads `/proc` and `/sys` itself.
final class NetlinkRouteWatcher: Sendable {
    /// How long after a message the watcher waits for more before calling back.
    static let settle = Duration.milliseconds(100)

    // linux/netlink.h and linux/rtnetlink.h, which Glibc does not bring in.
    private static let netlinkRoute: Int32 = 0
    private static let groups: UInt32 = 0x1 | 0x10 | 0x40 | 0x100 | 0x400   // LINK, IPV4_IFADDR, IPV4_ROUTE, IPV6_IFADDR, IPV6_ROUTE

    /// `struct sockaddr_nl`.
    private struct NetlinkAddress {
        var family = sa_family_t(AF_NETLINK)
        var pad: UInt16 = 0
        var pid: UInt32 = 0
        var groups: UInt32 = 0
    }

    private let socket: Int32
    private let stopPipe: (read: Int32, write: Int32)
    private let stopped = Atomic<Bool>(false)

    /// Opens the socket and starts the thread; `nil` when the kernel refuses a netlink socket
    /// (then the caller polls).
    init?(fallback: Duration, onChange: @escaping @Sendable () -> Void) {
        let fd = Glibc.socket(AF_NETLINK, Int32(SOCK_RAW.rawValue) | Int32(SOCK_CLOEXEC.rawValue), Self.netlinkRoute)
        guard fd >= 0 else { return nil }
        var address = NetlinkAddress(groups: Self.groups)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<NetlinkAddress>.size)) }
        }
        // A socket pair rather than pipe(2): close-on-exec from the start, so a child spawned
        // meanwhile by another thread inherits neither end.
        var pipeEnds: [Int32] = [-1, -1]
        guard bound == 0, socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pipeEnds) == 0 else {
            close(fd)
            return nil
        }
        socket = fd
        stopPipe = (pipeEnds[0], pipeEnds[1])
        let thread = Thread { [socket, stopPipe] in
            Self.watch(socket: socket, stop: stopPipe.read, fallback: fallback, onChange: onChange)
            close(socket)
            close(stopPipe.read)
        }
        thread.name = "paperboy-netlink"
        thread.stackSize = 128 * 1024
        thread.start()
    }

    deinit { stop() }

    /// Ends the thread (it closes the socket).
    func stop() {
        guard !stopped.exchange(true, ordering: .relaxed) else { return }
        var byte: UInt8 = 1
        _ = write(stopPipe.write, &byte, 1)
        close(stopPipe.write)
    }

    private static func watch(socket: Int32, stop: Int32, fallback: Duration, onChange: @Sendable () -> Void) {
        let fallbackMilliseconds = Int32(clamping: fallback.components.seconds * 1000)
        let settleMilliseconds = Int32(settle.components.attoseconds / 1_000_000_000_000_000)
        var descriptors = [pollfd(fd: socket, events: Int16(POLLIN), revents: 0), pollfd(fd: stop, events: Int16(POLLIN), revents: 0)]
        while true {
            let ready = poll(&descriptors, 2, fallbackMilliseconds)
            if ready < 0 {
                if errno == EINTR { continue }
                return
            }
            if descriptors[1].revents != 0 { return }
            if ready > 0 {
                // Drain this burst and the messages of the next `settle`: one call for all.
                repeat {
                    drain(socket)
                } while poll(&descriptors, 1, settleMilliseconds) > 0 && descriptors[0].revents != 0
            }
            onChange()
        }
    }

    /// Reads every waiting message (an overflowed socket says `ENOBUFS`: that is news too).
    private static func drain(_ socket: Int32) {
        var buffer = [UInt8](repeating: 0, count: 8192)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if count < 0, errno == ENOBUFS || errno == EINTR { continue }
            if count <= 0 { return }
        }
    }
}
