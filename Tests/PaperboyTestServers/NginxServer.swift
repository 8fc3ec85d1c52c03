#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

/// A real nginx on 127.0.0.1, started from a generated configuration in a temporary folder and
/// stopped by its PID.
///
/// It serves ``documentRoot`` at `/` with ranges, the same files rate-limited under `/slow/`
/// (for interruption tests), and under `/forced-gzip/` the gzip file beside each
/// (``LoopbackWebServer/publishGzipped(_:at:)``) with `Content-Encoding: gzip` whatever the
/// client accepts (`gzip_static always`, which serves no ranges). With TLS, `/to-http/PATH` on
/// the HTTPS port redirects to `PATH` on the plain port and `/to-https/PATH` on the plain port
/// to `PATH` on the HTTPS port.
public final class NginxServer: LoopbackWebServer, @unchecked Sendable {
    /// The HTTPS (and HTTP/2) port, when started with a certificate.
    public var tlsPort: Int? { ports.count > 1 ? ports[1] : nil }

    /// The nginx binary, if installed.
    public static var binary: String? { installed("nginx") }

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
        try super.init(name: "nginx", binary: binary, portCount: tls == nil ? 1 : 2) { folder, ports in
            let dir = folder.path
            let port = ports[0]
            var tlsServer = ""
            var toHTTPS = ""
            if let tls {
                let tlsPort = ports[1]
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
                log_format connections '$connection $status "$http_range" $body_bytes_sent';
                access_log \(dir)/logs/connections.log connections;
                log_format protocols '$server_protocol $connection $status $uri';
                access_log \(dir)/logs/protocols.log protocols;
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
                    location /forced-gzip/ {
                        alias \(dir)/www/;
                        gzip_static always;
                    }
                    \(toHTTPS)
                    \(locations)
                }
            \(tlsServer)
            }

            """
            let configURL = folder.appendingPathComponent("nginx.conf")
            try configuration.write(to: configURL, atomically: true, encoding: .utf8)
            return ["-p", dir, "-c", configURL.path, "-e", "\(dir)/logs/error.log"]
        }
    }

    /// The access log so far with the connection of each request: one
    /// `CONNECTION STATUS "RANGE" BYTES` line per request.
    public var connectionLog: [String] {
        let text = (try? String(contentsOf: folder.appendingPathComponent("logs/connections.log"), encoding: .utf8)) ?? ""
        return text.split(separator: "\n").map(String.init)
    }

    /// The access log so far with the protocol and connection of each request: one
    /// `PROTOCOL CONNECTION STATUS PATH` line per request (`HTTP/2.0 3 200 /a.bin`).
    public var protocolLog: [String] {
        let text = (try? String(contentsOf: folder.appendingPathComponent("logs/protocols.log"), encoding: .utf8)) ?? ""
        return text.split(separator: "\n").map(String.init)
    }

    /// `https://127.0.0.1:TLSPORT/PATH`.
    public func tlsURL(_ path: String) -> URL? {
        tlsPort.map { URL(string: "https://127.0.0.1:\($0)\(path.hasPrefix("/") ? path : "/" + path)")! }
    }
}
