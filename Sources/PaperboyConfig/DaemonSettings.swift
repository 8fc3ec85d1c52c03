import Foundation

/// The `[daemon]` section: how `paperboy daemon` serves its clients.
public struct DaemonSettings: Sendable, Equatable {
    /// The Unix socket the daemon listens on and clients connect to (`socket`).
    public var socket: URL
    /// How long the client that claimed an asset has to answer one of its authentication
    /// challenges before it gets default handling (`challenge_timeout`, default 60 s).
    public var challengeTimeout: Duration

    /// Creates daemon settings.
    public init(socket: URL, challengeTimeout: Duration = .seconds(60)) {
        self.socket = socket
        self.challengeTimeout = challengeTimeout
    }

    /// The default socket: `$XDG_RUNTIME_DIR/paperboy/daemon.sock`, or `daemon.sock` in the
    /// library folder when `XDG_RUNTIME_DIR` is unset (or not an absolute path).
    public static func defaultSocket(environment: [String: String], library: URL) -> URL {
        if let runtime = environment["XDG_RUNTIME_DIR"], runtime.hasPrefix("/") {
            return URL(fileURLWithPath: runtime, isDirectory: true).appendingPathComponent("paperboy/daemon.sock")
        }
        return library.appendingPathComponent("daemon.sock")
    }
}
