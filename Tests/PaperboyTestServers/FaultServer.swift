#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import Synchronization

/// A scriptable HTTP/1.1 server on 127.0.0.1 with an ephemeral port, for transport tests.
///
/// Each request is answered by the test's handler, which returns a ``ServerResponse``: a status,
/// headers and body, plus a fault (reset the connection after N body bytes, stall, close early).
/// Plain blocking sockets with a thread per connection keep it small and give exact control of
/// the bytes on the wire, without adding swift-nio to every CI build.
public final class FaultServer: Sendable {
    /// Answers one request.
    public typealias Handler = @Sendable (ServerRequest) -> ServerResponse

    private struct State {
        var requests: [ServerRequest] = []
        var perPath: [String: Int] = [:]
        var connections = 0
        var open: Set<Int32> = []
        var stopped = false
        var listenerClosed = false
        var bodyBytesSent = 0
        /// accept(2)'s failures by errno (EBADF or ENOTSOCK: something else closed the listener).
        var acceptFailures: [Int32: Int] = [:]
    }

    /// The port the server listens on.
    public let port: Int
    private let listener: Int32
    private let handler: Handler
    private let state = Mutex<State>(State())

    /// Starts a server answering with `handler`, on `port` (0: one the kernel picks).
    public init(port: Int = 0, handler: @escaping Handler) throws {
        let (fd, port) = try loopbackSocket(reuseAddress: true, port: port)
        guard listen(fd, 64) == 0 else {
            close(fd)
            throw ServerError("listen: \(String(cString: strerror(errno)))")
        }
        self.port = port
        if !usedPorts.withLock({ $0.insert(port).inserted }) { print("fault server: port \(port) used again in this process") }
        listener = fd
        self.handler = handler
        let thread = Thread { [self] in acceptLoop() }
        thread.name = "fault-server-accept"
        thread.start()
    }

    deinit { stop() }

    /// `http://HOST:PORT/PATH`; `host` may be `localhost` to look like another host.
    public func url(_ path: String, host: String = "127.0.0.1") -> URL {
        URL(string: "http://\(host):\(port)\(path.hasPrefix("/") ? path : "/" + path)")!
    }

    /// Every request received so far, in order.
    public var requests: [ServerRequest] { state.withLock { $0.requests } }

    /// Connections accepted so far.
    public var connectionCount: Int { state.withLock { $0.connections } }

    /// Body bytes sent so far, on every connection (a fault's cut included, nothing after it).
    public var bodyBytesSent: Int { state.withLock { $0.bodyBytesSent } }

    /// Bytes sent on open connections that their clients have not read yet: still in this
    /// server's send queues, or waiting in the clients' receive queues (loopback clients, seen
    /// in /proc/net/tcp).
    ///
    /// With ``bodyBytesSent`` it tells a test that the client took every byte the server sent
    /// (an event, where a sleep would guess how long that takes on a loaded machine).
    public var unreadBytes: Int {
        var peers: [UInt16] = []
        var queued = 0
        state.withLock { state in
            // Under the lock: no descriptor is closed (and its number reused) meanwhile.
            for fd in state.open {
                queued += Self.sendQueue(fd)
                if let port = Self.peerPort(fd) { peers.append(port) }
            }
        }
        return queued + Self.receiveQueues(ofLoopbackClients: Set(peers), server: UInt16(port))
    }

    /// What went wrong in accept(2) so far, as `strerror ×count` (empty when nothing did): for
    /// a test that saw no connection.
    public var acceptFailures: String {
        state.withLock { state in
            state.acceptFailures.map { "\(String(cString: strerror($0.key))) ×\($0.value)" }.joined(separator: ", ")
        }
    }

    /// Stops listening and drops every connection.
    ///
    /// Descriptors are shut down, and closed by their threads, under one lock: a number closed
    /// by one side and reused by another server in the same test process must never be shut
    /// down by this one (seen: another test's listener refusing connections).
    public func stop() {
        state.withLock { state in
            guard !state.stopped else { return }
            state.stopped = true
            if !state.listenerClosed { shutdown(listener, Int32(SHUT_RDWR)) }
            for fd in state.open { shutdown(fd, Int32(SHUT_RDWR)) }
        }
    }

    private var isStopped: Bool { state.withLock { $0.stopped } }

    // MARK: Connections

    private func acceptLoop() {
        defer {
            state.withLock { state in
                close(listener)
                state.listenerClosed = true
            }
        }
        while !isStopped {
            let fd = accept(listener, nil, nil)
            if fd < 0 {
                // Only stopping ends the loop: an aborted connection or a moment without file
                // descriptors (a busy test process) must not leave the server deaf.
                if isStopped { return }
                let failure = errno
                if failure != EINTR {
                    state.withLock { $0.acceptFailures[failure, default: 0] += 1 }
                    usleep(1_000)
                }
                continue
            }
            let number = state.withLock { state -> Int? in
                guard !state.stopped else { return nil }
                state.connections += 1
                state.open.insert(fd)
                return state.connections
            }
            guard let number else {
                close(fd)
                return
            }
            let thread = Thread { [self] in serve(fd, connection: number) }
            thread.name = "fault-server-connection"
            thread.start()
        }
    }

    private func serve(_ fd: Int32, connection: Int) {
        var buffer = Data()
        var resets = false
        defer {
            if resets {
                var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
                setsockopt(fd, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
            }
            state.withLock { state in
                state.open.remove(fd)
                close(fd)
            }
        }
        while !isStopped {
            guard var request = readRequest(fd, buffer: &buffer) else { return }
            request.connection = connection
            request = state.withLock { state in
                var numbered = request
                numbered.index = state.perPath[request.path, default: 0]
                state.perPath[request.path] = numbered.index + 1
                state.requests.append(numbered)
                return numbered
            }
            let response = handler(request)
            switch write(response, to: fd, method: request.method) {
            case .keepOpen:
                if request.header("connection")?.lowercased() == "close" { return }
            case .close:
                return
            case .reset:
                resets = true
                return
            }
        }
    }

    private func readRequest(_ fd: Int32, buffer: inout Data) -> ServerRequest? {
        let terminator = Data("\r\n\r\n".utf8)
        while buffer.range(of: terminator) == nil {
            var chunk = [UInt8](repeating: 0, count: 16 * 1024)
            let got = recv(fd, &chunk, chunk.count, 0)
            if got <= 0 { return nil }
            buffer.append(contentsOf: chunk[0..<got])
            if buffer.count > 1 << 20 { return nil }
        }
        let end = buffer.range(of: terminator)!
        let text = String(decoding: buffer[buffer.startIndex..<end.lowerBound], as: UTF8.self)
        buffer.removeSubrange(buffer.startIndex..<end.upperBound)
        var lines = text.components(separatedBy: "\r\n")
        let requestLine = lines.removeFirst().split(separator: " ")
        guard requestLine.count >= 2 else { return nil }
        var headers: [String: String] = [:]
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { continue }
            let name = line[..<colon].trimmingCharacters(in: .whitespaces).lowercased()
            headers[name] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return ServerRequest(method: String(requestLine[0]), path: String(requestLine[1]), headers: headers)
    }

    private enum Ending { case keepOpen, close, reset }

    private func write(_ response: ServerResponse, to fd: Int32, method: String) -> Ending {
        var head = "HTTP/1.1 \(response.status) \(response.reason)\r\n"
        var names = Set<String>()
        for (name, value) in response.headers {
            head += "\(name): \(value)\r\n"
            names.insert(name.lowercased())
        }
        if response.chunked {
            head += "Transfer-Encoding: chunked\r\n"
        } else if !names.contains("content-length") {
            head += "Content-Length: \(response.body.count)\r\n"
        }
        head += "\r\n"
        guard send(fd, Data(head.utf8)) else { return .close }
        if method == "HEAD" { return .keepOpen }

        var limit = response.body.count
        switch response.fault {
        case .resetAfter(let count), .stallAfter(let count), .closeAfter(let count): limit = min(limit, count)
        case .none, .holdAfter: break
        }
        var hold: (at: Int, until: @Sendable () -> Void)?
        if case .holdAfter(let count, let until) = response.fault { hold = (count, until) }
        var position = 0
        while position < limit {
            if let (at, until) = hold, position >= at {
                until()
                hold = nil
            }
            let end = min(limit, position + 64 * 1024, hold.map { max($0.at, position + 1) } ?? limit)
            let slice = response.body[response.body.startIndex + position..<response.body.startIndex + end]
            let ok = response.chunked
                ? send(fd, Data(String(end - position, radix: 16).utf8) + Data("\r\n".utf8) + slice + Data("\r\n".utf8))
                : send(fd, Data(slice))
            guard ok else { return .close }
            state.withLock { $0.bodyBytesSent += end - position }
            position = end
            if let delay = response.chunkDelay { Thread.sleep(forTimeInterval: delay) }
        }
        switch response.fault {
        case .none, .holdAfter:
            if response.chunked, !send(fd, Data("0\r\n\r\n".utf8)) { return .close }
            return .keepOpen
        case .closeAfter:
            return .close
        case .resetAfter:
            // A reset discards what is still in the send queue, but the client's kernel keeps
            // what it received readable: reset once every byte sent has arrived there.
            waitUntilDelivered(fd)
            return .reset
        case .stallAfter:
            waitUntilClosed(fd)
            return .close
        }
    }

    /// Returns once the client's kernel has acknowledged every byte sent on `fd`, the server
    /// stops, or 10 s pass (a client that stopped reading is reset with bytes unsent).
    private func waitUntilDelivered(_ fd: Int32) {
        let deadline = ContinuousClock.now + .seconds(10)
        while Self.sendQueue(fd) > 0, !isStopped, ContinuousClock.now < deadline {
            usleep(1_000)   // this connection's own thread: polling the kernel's queue
        }
    }

    private func waitUntilClosed(_ fd: Int32) {
        var scratch = [UInt8](repeating: 0, count: 4096)
        while !isStopped {
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&poller, 1, 100)
            if ready < 0, errno != EINTR { return }
            if ready > 0, recv(fd, &scratch, scratch.count, 0) <= 0 { return }
        }
    }

    private func send(_ fd: Int32, _ data: Data) -> Bool {
        data.withUnsafeBytes { buffer in
            var sent = 0
            while sent < buffer.count {
                let count = Glibc.send(fd, buffer.baseAddress! + sent, buffer.count - sent, Int32(MSG_NOSIGNAL))
                if count < 0, errno == EINTR { continue }
                if count <= 0 { return false }
                sent += count
            }
            return true
        }
    }
}

extension FaultServer {
    /// Bytes of `fd`'s send queue not yet acknowledged by the peer (SIOCOUTQ).
    static func sendQueue(_ fd: Int32) -> Int {
        var count: Int32 = 0
        return ioctl(fd, UInt(TIOCOUTQ), &count) == 0 ? Int(count) : 0
    }

    /// The port of `fd`'s peer.
    static func peerPort(_ fd: Int32) -> UInt16? {
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let found = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getpeername(fd, $0, &length) == 0 }
        }
        return found ? UInt16(bigEndian: address.sin_port) : nil
    }

    /// The receive queues of the loopback sockets on `clients` ports connected to `server`, from
    /// /proc/net/tcp (`sl local remote st tx_queue:rx_queue …`, ports in hexadecimal).
    static func receiveQueues(ofLoopbackClients clients: Set<UInt16>, server: UInt16) -> Int {
        guard !clients.isEmpty, let table = try? String(contentsOfFile: "/proc/net/tcp", encoding: .utf8) else { return 0 }
        var total = 0
        for line in table.split(separator: "\n").dropFirst() {
            let fields = line.split(separator: " ")
            guard fields.count > 4,
                  let local = fields[1].split(separator: ":").last.flatMap({ UInt16($0, radix: 16) }),
                  let remote = fields[2].split(separator: ":").last.flatMap({ UInt16($0, radix: 16) }),
                  clients.contains(local), remote == server,
                  let received = fields[4].split(separator: ":").last.flatMap({ Int($0, radix: 16) }) else { continue }
            total += received
        }
        return total
    }
}

/// A request as the server read it.
public struct ServerRequest: Sendable {
    /// `GET`, `HEAD`, …
    public var method: String
    /// The request target, such as `/file.bin`.
    public var path: String
    /// Header fields, names lowercased.
    public var headers: [String: String]
    /// Which accepted connection carried it (1 for the first).
    public var connection = 0
    /// How many requests for the same path came before it.
    public var index = 0

    /// The value of header `name` (any case).
    public func header(_ name: String) -> String? { headers[name.lowercased()] }

    /// The `host:port` the client addressed.
    public var host: String { header("host") ?? "" }
}

/// What the server answers, and how it misbehaves.
public struct ServerResponse: Sendable {
    /// A way to break the response.
    public enum Fault: Sendable {
        case none
        /// Send this many body bytes, then reset the connection (RST).
        case resetAfter(Int)
        /// Send this many body bytes, then send nothing until the client gives up.
        case stallAfter(Int)
        /// Send this many body bytes, then close normally (a body shorter than announced).
        case closeAfter(Int)
        /// Send this many body bytes, then call `until` on the connection's thread (it blocks
        /// until the test's event), then send the rest: a response held mid-body by an event,
        /// not by a guess at time.
        case holdAfter(Int, until: @Sendable () -> Void)
    }

    public var status: Int
    public var headers: [(String, String)]
    public var body: Data
    public var fault: Fault
    /// Send the body with chunked transfer encoding (no Content-Length).
    public var chunked: Bool
    /// Seconds to wait after each 64 KiB of body.
    public var chunkDelay: TimeInterval?

    /// Creates a response.
    public init(
        status: Int = 200, headers: [(String, String)] = [], body: Data = Data(), fault: Fault = .none,
        chunked: Bool = false, chunkDelay: TimeInterval? = nil
    ) {
        self.status = status
        self.headers = headers
        self.body = body
        self.fault = fault
        self.chunked = chunked
        self.chunkDelay = chunkDelay
    }

    var reason: String {
        switch status {
        case 200: "OK"
        case 206: "Partial Content"
        case 301: "Moved Permanently"
        case 302: "Found"
        case 401: "Unauthorized"
        case 403: "Forbidden"
        case 404: "Not Found"
        case 407: "Proxy Authentication Required"
        case 416: "Range Not Satisfiable"
        case 429: "Too Many Requests"
        case 500: "Internal Server Error"
        case 503: "Service Unavailable"
        default: "Status"
        }
    }

    /// A redirect to `location`.
    public static func redirect(to location: String, status: Int = 302) -> ServerResponse {
        ServerResponse(status: status, headers: [("Location", location)])
    }

    /// `data` served as a static file server would: `ETag`, `Last-Modified`, and `Range` with
    /// `If-Range` honoured (206, or 416 past the end) unless `honoursRange` is false.
    public static func serving(
        _ data: Data, for request: ServerRequest, etag: String? = "\"v1\"",
        lastModified: String? = "Tue, 01 Jul 2025 10:00:00 GMT", honoursRange: Bool = true,
        fault: Fault = .none, chunked: Bool = false
    ) -> ServerResponse {
        var headers: [(String, String)] = [("Content-Type", "application/octet-stream"), ("Accept-Ranges", "bytes")]
        if let etag { headers.append(("ETag", etag)) }
        if let lastModified { headers.append(("Last-Modified", lastModified)) }
        if honoursRange, let range = request.header("range"), range.hasPrefix("bytes="),
           let start = Int(range.dropFirst(6).split(separator: "-", omittingEmptySubsequences: false).first ?? "") {
            let condition = request.header("if-range")
            let current = condition == nil || (condition == etag && etag?.hasPrefix("\"") == true) || condition == lastModified
            if current {
                if start >= data.count {
                    return ServerResponse(status: 416, headers: headers + [("Content-Range", "bytes */\(data.count)")], fault: fault)
                }
                return ServerResponse(
                    status: 206, headers: headers + [("Content-Range", "bytes \(start)-\(data.count - 1)/\(data.count)")],
                    body: data.subdata(in: start..<data.count), fault: fault, chunked: chunked)
            }
        }
        return ServerResponse(status: 200, headers: headers, body: data, fault: fault, chunked: chunked)
    }
}

/// A test server could not start.
public struct ServerError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// A loopback port bound but not listening: connections to it are refused, and no other
/// server of the test process can take it while this lives (a stopped server's port can be
/// taken by another test at once).
public final class RefusingPort: Sendable {
    public let port: Int
    private let fd: Int32

    public init() throws {
        (fd, port) = try loopbackSocket(reuseAddress: false)
    }

    deinit { close(fd) }

    /// `http://127.0.0.1:PORT/PATH`.
    public func url(_ path: String) -> URL {
        URL(string: "http://127.0.0.1:\(port)\(path.hasPrefix("/") ? path : "/" + path)")!
    }
}

/// Ports fault servers of this process have listened on.
private let usedPorts = Mutex<Set<Int>>([])

/// A TCP socket bound to 127.0.0.1 on `port` (0: one the kernel picks); returns it and the port.
func loopbackSocket(reuseAddress: Bool, port: Int = 0) throws -> (fd: Int32, port: Int) {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw ServerError("socket: \(String(cString: strerror(errno)))") }
    if reuseAddress {
        var yes: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
    }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    let bound = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard bound == 0 else {
        close(fd)
        throw ServerError("bind: \(String(cString: strerror(errno)))")
    }
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
    }
    return (fd, Int(UInt16(bigEndian: address.sin_port)))
}
