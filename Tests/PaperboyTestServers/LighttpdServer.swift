import Foundation

/// A real lighttpd on 127.0.0.1, started from a generated configuration in a temporary folder and
/// stopped by its PID: a second kind of server for the resume cases, besides nginx.
///
/// It serves ``documentRoot`` at `/` with ranges, `ETag` and `Last-Modified`, and the same files
///
/// - rate-limited under `/slow/` (for interruption tests);
/// - gzip-compressed under `/forced-gzip/` by `mod_deflate`, whatever the client's
///   `Accept-Encoding` (the request's header is replaced with `gzip` first, as Apache's
///   `SetEnv force-gzip` and some CDNs do), with `ETag: "…-gzip"`;
///
/// and answers 403 for names ending in `.secret`.
public final class LighttpdServer: LoopbackWebServer, @unchecked Sendable {
    /// The lighttpd binary, if installed.
    public static var binary: String? { installed("lighttpd") }

    /// Starts lighttpd and returns once its port answers.
    ///
    /// It blocks while lighttpd starts: call it off the cooperative pool (``offThePool(_:)``).
    ///
    /// - Parameters:
    ///   - binary: the lighttpd executable.
    ///   - slowKilobytesPerSecond: the rate of `/slow/`, in KiB/s.
    /// - Throws: ``ServerError`` naming the port and quoting lighttpd's error log when it exits
    ///   or does not answer within 30 s.
    public init(binary: String, slowKilobytesPerSecond: Int = 4096) throws {
        try super.init(name: "lighttpd", binary: binary) { folder, ports in
            let dir = folder.path
            let configuration = """
                server.document-root = "\(dir)/www"
                server.bind = "127.0.0.1"
                server.port = \(ports[0])
                server.pid-file = "\(dir)/lighttpd.pid"
                server.errorlog = "\(dir)/logs/error.log"
                server.upload-dirs = ("\(dir)/tmp")
                # A file a test replaces is seen by the next request, not a second later.
                server.stat-cache-engine = "disable"
                server.modules += ("mod_access", "mod_alias", "mod_setenv", "mod_deflate", "mod_accesslog")
                # Without a type for the file lighttpd sends neither ETag nor Last-Modified.
                mimetype.assign = ("" => "application/octet-stream")
                # Through a pipe: lighttpd writes each line at once there, but buffers a log file for
                # up to 4 s.
                accesslog.filename = "|/bin/cat >> \(dir)/logs/access.log"
                accesslog.format = "%>s \\"%{Range}i\\" %b"
                url.access-deny = (".secret")
                deflate.mimetypes = ("application/octet-stream")
                deflate.allowed-encodings = ("gzip")
                $HTTP["url"] =~ "^/slow/" {
                    alias.url = ("/slow/" => "\(dir)/www/")
                    connection.kbytes-per-second = \(slowKilobytesPerSecond)
                }
                $HTTP["url"] =~ "^/forced-gzip/" {
                    alias.url = ("/forced-gzip/" => "\(dir)/www/")
                    setenv.set-request-header = ("Accept-Encoding" => "gzip")
                }

                """
            let configURL = folder.appendingPathComponent("lighttpd.conf")
            try configuration.write(to: configURL, atomically: true, encoding: .utf8)
            return ["-D", "-f", configURL.path]
        }
        // lighttpd starts even when a module it was told to load is missing (it says
        // `dlopen() failed` on its standard error and serves without it): `/forced-gzip/` would
        // then send the file unencoded, and the tests of encoded bodies would fail for the wrong
        // reason. `-tt` loads the modules again and says so on its standard error.
        let check = folder.appendingPathComponent("logs/modules.log")
        let fd = open(check.path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        if fd >= 0 {
            defer { close(fd) }
            let loading = try? ChildProcess(binary, ["-tt", "-f", folder.appendingPathComponent("lighttpd.conf").path], standardError: fd)
            loading?.waitUntilExit()
        }
        let log = (try? String(contentsOf: check, encoding: .utf8)) ?? ""
        if let line = log.split(separator: "\n").first(where: { $0.contains("dlopen() failed") }) {
            stop()
            throw ServerError("lighttpd could not load a module (scripts/install-deps --tests installs lighttpd-mod-deflate): \(line)")
        }
    }
}
