#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

/// A real web server program (nginx, lighttpd) a test runs on 127.0.0.1: a temporary folder for
/// its configuration, logs and files, the process started from a configuration the subclass
/// generates and stopped by its PID, and the ports it listens on.
///
/// Every server logs each request as `STATUS "RANGE" BYTES` in `logs/access.log` and its
/// errors in `logs/error.log`, and serves ``documentRoot`` at `/`.
public class LoopbackWebServer: @unchecked Sendable {
    /// The (first) port the server listens on.
    public var port: Int { ports[0] }
    /// Every port the server listens on, as the subclass asked for.
    let ports: [Int]
    /// Files placed here are served.
    public let documentRoot: URL
    /// The folder holding the configuration, logs and temporary files.
    public let folder: URL
    private let process: ChildProcess

    /// Finds an installed server program: in the usual `sbin` and `bin` folders, then on `PATH`.
    static func installed(_ program: String) -> String? {
        let candidates = ["/usr/sbin", "/usr/local/sbin", "/usr/bin", "/usr/local/bin"].map { "\($0)/\(program)" }
        if let found = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0) }) { return found }
        for folder in (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":") {
            let path = "\(folder)/\(program)"
            if FileManager.default.isExecutableFile(atPath: path) { return path }
        }
        return nil
    }

    /// `binary` when the server is installed; otherwise `nil` (the test skips, saying so), or,
    /// under `CI=true`, an error: CI must install every server the tests start.
    ///
    /// - Throws: ``ServerError`` naming the program and the Debian package, under `CI=true` only.
    public static func required(_ binary: String?, program: String, package: String) throws -> String? {
        if let binary { return binary }
        if ProcessInfo.processInfo.environment["CI"] == "true" {
            throw ServerError("\(program) is not installed: CI must install it (scripts/install-deps --tests installs \(package))")
        }
        print("skipping \(program) integration test: \(program) is not installed (apt-get install \(package))")
        return nil
    }

    /// Starts the server and returns once it listens on its first port (another program
    /// listening there does not count).
    ///
    /// It blocks while the server starts: call it off the cooperative pool (``offThePool(_:)``).
    /// A free port can be taken by another test between the check and the server's bind: then
    /// the server exits saying the address is in use, and it is started again on other ports.
    ///
    /// - Parameters:
    ///   - name: the program's name, for the folder and messages.
    ///   - binary: the executable.
    ///   - portCount: how many ports the configuration needs.
    ///   - configure: writes the configuration for these ports into the folder (which has `www`,
    ///     `tmp` and `logs`) and returns the program's arguments.
    /// - Throws: ``ServerError`` naming the port and quoting the error log when the server exits
    ///   or does not answer within 30 s.
    init(name: String, binary: String, portCount: Int = 1,
         configure: (_ folder: URL, _ ports: [Int]) throws -> [String]) throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("paperboy-\(name)-\(UUID().uuidString)")
        documentRoot = folder.appendingPathComponent("www")
        for sub in ["www", "tmp", "logs"] {
            try FileManager.default.createDirectory(at: folder.appendingPathComponent(sub), withIntermediateDirectories: true)
        }
        let errorLog = folder.appendingPathComponent("logs/error.log")
        var attempt = 0
        while true {
            attempt += 1
            let ports = try (0..<portCount).map { _ in try Self.freePort() }
            let process = try ChildProcess(binary, try configure(folder, ports), unblockingSignals: true)
            ServerReaper.track(process.processIdentifier)
            // A guard against a hang only: these servers answer within a second even on a loaded machine.
            let deadline = ContinuousClock.now + .seconds(30)
            var failure: String?
            // Started means this process listens there: another test's server that took the port
            // between the check and the bind also accepts (an sshd's banner read as HTTP/0.9).
            while !(Self.accepts(port: ports[0]) && Self.listens(pid: process.processIdentifier, port: ports[0])) {
                let exited = !process.isRunning
                if exited || ContinuousClock.now > deadline {
                    failure = exited ? "it exited" : "no answer in 30 s"
                    break
                }
                usleep(20_000)
            }
            guard let failure else {
                (self.ports, self.process) = (ports, process)
                return
            }
            process.signal(SIGTERM)
            ServerReaper.untrack(process.processIdentifier)
            process.waitUntilExit()
            let log = (try? String(contentsOf: errorLog, encoding: .utf8)) ?? ""
            // Another process took the port between the check and the bind: nginx says so in its
            // error log, lighttpd on its standard error (its error log is not open yet), so a
            // server that exited is started again on other ports (a bad configuration fails three times).
            if attempt < 3, log.contains("in use") || failure == "it exited" {
                try? FileManager.default.removeItem(at: errorLog)
                continue
            }
            try? FileManager.default.removeItem(at: folder)
            throw ServerError("\(name) did not start on port \(ports[0]) (\(failure)); error.log: \(log)")
        }
    }

    deinit {
        stop()
        // Removed once the server has exited (it writes its logs until then), by a thread of its own.
        let (process, folder) = (process, folder)
        Thread {
            process.waitUntilExit()
            try? FileManager.default.removeItem(at: folder)
        }.start()
    }

    /// `http://127.0.0.1:PORT/PATH`.
    public func url(_ path: String) -> URL {
        URL(string: "http://127.0.0.1:\(port)\(path.hasPrefix("/") ? path : "/" + path)")!
    }

    /// The access log so far, one `STATUS "RANGE" BYTES` line per request.
    public var accessLog: [String] {
        let text = (try? String(contentsOf: folder.appendingPathComponent("logs/access.log"), encoding: .utf8)) ?? ""
        return text.split(separator: "\n").map(String.init)
    }

    /// Places `data` at `path` under ``documentRoot``, creating folders as needed.
    public func publish(_ data: Data, at path: String) throws {
        let file = documentRoot.appendingPathComponent(path)
        try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        try data.write(to: file)
    }

    /// Places `data` at `path`, and its gzip compression (by `gzip -n`) at `path.gz`, which
    /// nginx's `/forced-gzip/` serves; returns the compressed bytes.
    @discardableResult
    public func publishGzipped(_ data: Data, at path: String) throws -> Data {
        try publish(data, at: path)
        let file = documentRoot.appendingPathComponent(path)
        // gzip is essential in Debian: always there.
        guard let gzip = Self.installed("gzip") else { throw ServerError("gzip is not installed") }
        let made = try ChildProcess.run(gzip, ["-n", "-k", "-f", file.path])
        guard made.status == 0 else { throw ServerError("gzip \(file.path) failed with status \(made.status)") }
        return try Data(contentsOf: file.appendingPathExtension("gz"))
    }

    /// Stops the server by its PID (SIGTERM), without waiting for it to exit: the caller may be
    /// on the cooperative pool. The process is reaped by ``ChildProcess``'s own thread.
    public func stop() {
        process.signal(SIGTERM)
        ServerReaper.untrack(process.processIdentifier)
    }

    /// Returns once the server process has exited (after ``stop()``), without blocking a thread
    /// of the cooperative pool.
    public func exited() async {
        await process.exited()
    }

    /// A port on 127.0.0.1 free at the time of the call.
    static func freePort() throws -> Int {
        let (fd, port) = try loopbackSocket(reuseAddress: false)
        close(fd)
        return port
    }

    /// Whether process `pid` holds the socket listening on 127.0.0.1:`port`: the socket's inode
    /// in `/proc/net/tcp` is among the process's descriptors.
    public static func listens(pid: pid_t, port: Int) -> Bool {
        // Read to its end: a /proc file says it is empty, and a read of its announced size gets a
        // page at most (a loaded suite has more sockets than a page holds).
        guard let file = FileHandle(forReadingAtPath: "/proc/net/tcp") else { return false }
        defer { try? file.close() }
        guard let bytes = try? file.readToEnd() else { return false }
        let table = String(decoding: bytes, as: UTF8.self)
        let local = String(format: "0100007F:%04X", port)
        var inodes: Set<Substring> = []
        for line in table.split(separator: "\n").dropFirst() {
            let fields = line.split(separator: " ")
            // sl, local_address, rem_address, st (0A: listening), …, inode (the tenth).
            guard fields.count > 9, fields[1] == local, fields[3] == "0A" else { continue }
            inodes.insert(fields[9])
        }
        guard !inodes.isEmpty, let descriptors = try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd") else { return false }
        return descriptors.contains { descriptor in
            guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\(descriptor)"),
                  target.hasPrefix("socket:["), target.hasSuffix("]") else { return false }
            return inodes.contains(target.dropFirst("socket:[".count).dropLast())
        }
    }

    /// Whether something accepts connections on `port` of 127.0.0.1.
    static func accepts(port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
    }
}
