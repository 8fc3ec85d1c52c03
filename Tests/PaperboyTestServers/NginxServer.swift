#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

/// A real nginx on 127.0.0.1, started from a generated configuration in a temporary folder and
/// stopped by its PID.
///
/// It serves ``documentRoot`` at `/` with ranges, and the same files rate-limited under `/slow/`
/// (for interruption tests). With TLS, `/to-http/PATH` on the HTTPS port redirects to `PATH`
/// on the plain port and `/to-https/PATH` on the plain port to `PATH` on the HTTPS port.
public final class NginxServer: @unchecked Sendable {
    /// The port nginx listens on.
    public let port: Int
    /// The HTTPS (and HTTP/2) port, when started with a certificate.
    public let tlsPort: Int?
    /// Files placed here are served.
    public let documentRoot: URL
    /// The folder holding the configuration, logs and temporary files.
    public let folder: URL
    private let process: ChildProcess

    /// The nginx binary, if installed.
    public static var binary: String? {
        let candidates = ["/usr/sbin/nginx", "/usr/local/sbin/nginx", "/usr/bin/nginx", "/usr/local/bin/nginx"]
        if let found = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0) }) { return found }
        for folder in (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":") {
            let path = "\(folder)/nginx"
            if FileManager.default.isExecutableFile(atPath: path) { return path }
        }
        return nil
    }

    /// Starts nginx and returns once its port answers.
    ///
    /// It blocks while nginx starts: call it off the cooperative pool (``offThePool(_:)``).
    ///
    /// - Parameters:
    ///   - binary: the nginx executable.
    ///   - slowRate: the `limit_rate` of the `/slow/` location, such as `2m`.
    ///   - tls: a PEM certificate and key to serve HTTPS with, on ``tlsPort``.
    ///   - locations: more directives for the plain port's `server` block, such as a
    ///     `location /private/ { auth_basic …; }` or a `return 302 …` to another server.
    /// - Throws: ``ServerError`` naming the port and quoting nginx's error log when nginx exits
    ///   or does not answer within 30 s.
    public init(binary: String, slowRate: String = "2m", tls: (certificate: URL, key: URL)? = nil, locations: String = "") throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("paperboy-nginx-\(UUID().uuidString)")
        documentRoot = folder.appendingPathComponent("www")
        for sub in ["www", "tmp", "logs"] {
            try FileManager.default.createDirectory(at: folder.appendingPathComponent(sub), withIntermediateDirectories: true)
        }
        port = try Self.freePort()
        tlsPort = tls == nil ? nil : try Self.freePort()
        let dir = folder.path
        var tlsServer = ""
        var toHTTPS = ""
        if let tls, let tlsPort {
            tlsServer = """
                server {
                    listen 127.0.0.1:\(tlsPort) ssl http2;
                    ssl_certificate \(tls.certificate.path);
                    ssl_certificate_key \(tls.key.path);
                    root \(dir)/www;
                    location /to-http/ { rewrite ^/to-http/(.*)$ http://127.0.0.1:\(port)/$1 redirect; }
                }
            """
            toHTTPS = "location /to-https/ { rewrite ^/to-https/(.*)$ https://127.0.0.1:\(tlsPort)/$1 redirect; }"
        }
        // Workers run as root when the tests do: otherwise they cannot read a 0700 temp folder.
        let user = geteuid() == 0 ? "user root;\n" : ""
        let configuration = """
        \(user)worker_processes 1;
        daemon off;
        pid \(dir)/nginx.pid;
        error_log \(dir)/logs/error.log warn;
        events { worker_connections 256; }
        http {
            log_format ranges '$status "$http_range" $body_bytes_sent';
            access_log \(dir)/logs/access.log ranges;
            default_type application/octet-stream;
            sendfile on;
            client_body_temp_path \(dir)/tmp/body;
            proxy_temp_path \(dir)/tmp/proxy;
            fastcgi_temp_path \(dir)/tmp/fastcgi;
            uwsgi_temp_path \(dir)/tmp/uwsgi;
            scgi_temp_path \(dir)/tmp/scgi;
            keepalive_requests 100000;
            server {
                listen 127.0.0.1:\(port);
                root \(dir)/www;
                location /slow/ {
                    alias \(dir)/www/;
                    limit_rate \(slowRate);
                }
                \(toHTTPS)
                \(locations)
            }
        \(tlsServer)
        }

        """
        let configURL = folder.appendingPathComponent("nginx.conf")
        try configuration.write(to: configURL, atomically: true, encoding: .utf8)

        process = try ChildProcess(binary, ["-p", dir, "-c", configURL.path, "-e", "\(dir)/logs/error.log"])
        ServerReaper.track(process.processIdentifier)

        // A guard against a hang only: nginx answers within a second even on a loaded machine.
        let deadline = ContinuousClock.now + .seconds(30)
        while !Self.accepts(port: port) {
            let exited = !process.isRunning
            if exited || ContinuousClock.now > deadline {
                let log = (try? String(contentsOf: folder.appendingPathComponent("logs/error.log"), encoding: .utf8)) ?? ""
                stop()
                throw ServerError("nginx did not start on port \(port) (\(exited ? "it exited" : "no answer in 30 s")); error.log: \(log)")
            }
            usleep(20_000)
        }
    }

    deinit {
        stop()
        // Removed once nginx has exited (it writes its logs until then), by a thread of its own.
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

    /// `https://127.0.0.1:TLSPORT/PATH`.
    public func tlsURL(_ path: String) -> URL? {
        tlsPort.map { URL(string: "https://127.0.0.1:\($0)\(path.hasPrefix("/") ? path : "/" + path)")! }
    }

    /// The access log so far, one `STATUS "RANGE" BYTES` line per request.
    public var accessLog: [String] {
        let text = (try? String(contentsOf: folder.appendingPathComponent("logs/access.log"), encoding: .utf8)) ?? ""
        return text.split(separator: "\n").map(String.init)
    }

    /// Stops nginx by its PID (SIGTERM), without waiting for it to exit: the caller may be on
    /// the cooperative pool. The process is reaped by ``ChildProcess``'s own thread.
    public func stop() {
        process.signal(SIGTERM)
        ServerReaper.untrack(process.processIdentifier)
    }

    static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw ServerError("socket: \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let ok = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0
            }
        }
        guard ok else { throw ServerError("no free port: \(String(cString: strerror(errno)))") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

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
