import Foundation
import Paperboy

extension Library {
    /// Connects to the `paperboy daemon` listening on `socket` and returns its library: the same
    /// ``Library`` as in process, served by the daemon. Downloads go on when the app quits.
    ///
    /// ```swift
    /// let library = try await Library.connect(socket: socketURL, name: "MyApp")
    /// for asset in try await library.downloadingAssets() { try await asset.download(delegate: delegate) }
    /// ```
    ///
    /// Every asynchronous method of `Library`, ``Issue`` and ``AssetDownload`` asks the daemon.
    /// The synchronous properties (``Library/issues``, ``Issue/isNew``, ``AssetDownload/state``,
    /// ``AssetDownload/userInfo``…) answer with what the daemon last reported to this connection
    /// (its replies and events), never waiting for it: an issue or asset this connection has not
    /// seen yet reads as absent. A file handed to
    /// ``AssetDownloadDelegate/download(_:didFinishDownloadingTo:)`` is in the daemon's inbox;
    /// returning acknowledges it, throwing keeps it for the next connection. ``Library/close()``
    /// closes the connection.
    ///
    /// - Parameters:
    ///   - socket: the daemon's socket (`[daemon] socket` of its configuration).
    ///   - name: how the daemon's log names this client.
    ///   - clock: where the wait for the daemon's `HELLO` (at most 10 s) is measured; tests pass
    ///     PaperboyTesting's `TestClock`.
    /// - Throws: ``LibraryError`` `.transport` when no daemon listens there, it refuses, or it
    ///   does not answer `HELLO` in time.
    public static func connect(socket: URL, name: String = "PaperboyClient",
                               clock: any LibraryClock = SystemClock()) async throws(LibraryError) -> Library {
        Library(backend: try await DaemonBackend.connect(socket: socket, name: name, clock: clock))
    }

    /// The daemon serving this library; `nil` in process.
    package var daemon: DaemonBackend? { backend as? DaemonBackend }
}

extension Library {
    /// Closes the daemon connection at once, as ``Library/close()`` does through a daemon (for a
    /// `defer`); does nothing in process.
    package func disconnect() {
        daemon?.disconnect()
    }
}
