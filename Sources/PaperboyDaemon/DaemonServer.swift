#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Logging
import Paperboy
import PaperboyWire
import PaperboyFraming
import Synchronization

/// Serves a library to clients on a Unix socket (the protocol of docs/Daemon.md).
///
/// One thread accepts connections; each connection has a reader and a writer thread (see
/// ``DaemonConnection``); nothing runs while nothing happens. Requests are answered in the
/// order they arrive on a connection, except `RELOAD`, answered when the reload is done.
public final class DaemonServer: Sendable {
    /// The version reported in `HELLO`, and by `paperboy --version` (the release's `v` tag
    /// without its `v`).
    public static let version = "0.1.0"
    /// Connections served at once; more are refused.
    public static let maxConnections = 64

    let library: Library
    private let socket: URL
    private let logger: Logger
    private let reload: @Sendable () async throws -> Int
    private let daemonUID: uid_t
    private let desk: DeliveryDesk
    private let challenges: ChallengeRelay
    private let registry = Registry()
    /// What goes out to clients in the order the library told it: its events, and the answers
    /// that must not overtake them (``sendAfterEvents(_:on:)``), handed to one task in order.
    private let outbox = AsyncStream.makeStream(of: Outgoing.self)
    private let listener = Mutex<Int32>(-1)
    /// Answers `NOTIFY` (see ``answerNotifications(with:)``).
    let notifyHandler = Mutex<NotifyHandler?>(nil)
    /// Whether the listening socket came from systemd (which owns it: never shut down or unlinked).
    private let activated = Mutex(false)

    /// The connections, shared with the delivery desk's broadcasts.
    private final class Registry: Sendable {
        struct State {
            var connections: [Int: DaemonConnection] = [:]
            /// Which connection claimed each asset last: it answers the asset's challenges.
            var claimants: [String: Int] = [:]
            var counter = 0
            var stopped = false
            var events: Task<Void, Never>?
            var progress: Task<Void, Never>?
        }

        let state = Mutex(State())

        /// The connection that claimed `asset` last, while it is connected.
        func claimant(of asset: String) -> DaemonConnection? {
            state.withLock { state in state.claimants[asset].flatMap { state.connections[$0] } }
        }
    }

    /// Creates a server for `library` (which it does not close).
    ///
    /// - Parameters:
    ///   - socket: where to listen (see ``DaemonSocket``).
    ///   - reload: reads the configuration again and applies it (`RELOAD`, SIGHUP); returns how
    ///     many issues it added.
    ///   - daemonUID: the only user admitted (the process's own by default).
    ///   - challengeTimeout: how long the client that claimed an asset has to answer one of its
    ///     authentication challenges before it gets default handling.
    ///   - clock: where `challengeTimeout` is measured (the library configuration's clock).
    public init(library: Library, socket: URL, logger: Logger, daemonUID: uid_t = getuid(),
                challengeTimeout: Duration = .seconds(60), clock: any LibraryClock = SystemClock(),
                reload: @escaping @Sendable () async throws -> Int) {
        self.library = library
        self.socket = socket
        self.logger = logger
        self.reload = reload
        self.daemonUID = daemonUID
        let registry = registry
        let challenges = ChallengeRelay(logger: logger, timeout: challengeTimeout, clock: clock)
        self.challenges = challenges
        desk = DeliveryDesk(libraryRoot: library.root, logger: logger, broadcast: { event in
            let subscribed = registry.state.withLock { Array($0.connections.values) }
            for connection in subscribed { connection.send(event: event) }
        }, askClient: { asset, challenge in
            await challenges.ask(challenge, asset: asset, on: registry.claimant(of: asset.identifier))
        }, askResuming: { asset, request in
            await challenges.askResuming(request, asset: asset, on: registry.claimant(of: asset.identifier))
        })
    }

    /// Listens on the socket and re-attaches the claimed assets of an earlier run; other finished
    /// files are delivered (open the library with `deliversFinishedFilesOnOpen` false, so that a
    /// claimed file waits for this).
    ///
    /// - Parameter activatedListener: a listening socket to serve instead of creating one at the
    ///   server's path (systemd socket activation: ``DaemonSocket/activatedListener()``).
    /// - Throws: ``LibraryError`` `.storage` when the socket cannot be created.
    public func start(activatedListener: Int32? = nil) throws(LibraryError) {
        let fd = if let activatedListener { activatedListener } else { try DaemonSocket.listen(at: socket) }
        listener.withLock { $0 = fd }
        do {
            try DaemonRecord(pid: getpid(), socket: socket.path).write(in: library.root)
        } catch {
            logger.warning("cannot record the daemon in \(library.root.path): \(error)")
        }
        activated.withLock { $0 = activatedListener != nil }
        if desk.claimsWereLost {
            // The finished files waiting in the inbox are what a client may not have taken yet.
            let waiting = library.downloadingAssets.filter { $0.state == .finished }.map(\.identifier)
            desk.reclaim(waiting)
            logger.notice("claims rebuilt from the inbox: \(waiting.count) finished file(s) wait for a client")
        }
        let claims = desk.claims
        for id in claims {
            if let asset = try served().asset(identifier: id), asset.state.isActive {
                try served().start(asset, delegate: desk)
            } else {
                desk.release(id)
            }
        }
        for asset in library.downloadingAssets where asset.state == .finished && !claims.contains(asset.identifier) {
            try served().start(asset, delegate: nil)
        }
        // Put in the outbox as the library tells them, on its thread: an event is in line before
        // anything the library does after telling it, so a `WAIT` answered once an asset is
        // delivered goes out after the `delivered` event (a client's synchronous read after the
        // answer finds it). The frames are made on the outbox's task, off the library's path.
        let outbox = outbox.continuation
        let local = library.local
        let events = try served().events { event in
            // The size of a transfer that ends, read now from memory, where it still is: read
            // later from the store, it cost a read transaction per asset (a fifth of the
            // daemon's time in a sync of 1,000 small files).
            var bytes: RunningTransfer?
            if case .assetStateChanged(let asset, let state) = event, state == .finished || state == .delivered {
                bytes = local?.bytesInMemory(ofAsset: asset.identifier)
            }
            outbox.yield(.event(event, bytes: bytes))
            return false
        }
        let task = Task { [self] in
            // The subscription lives as long as this task.
            await withTaskCancellationHandler {
                var sizes = EndSizes()
                for await outgoing in self.outbox.stream {
                    switch outgoing {
                    case .event(let event, let bytes): forward(event, bytes: bytes, sizes: &sizes)
                    case .answer(let frame, let connection): connection.send(frame)
                    }
                }
            } onCancel: {
                outbox.finish()
            }
            withExtendedLifetime(events) {}
        }
        let ticker = Task { [self] in await reportProgress() }
        registry.state.withLock { state in
            state.events = task
            state.progress = ticker
        }
        let thread = Thread { [self] in acceptLoop(fd) }
        thread.name = "paperboy-daemon-accept"
        thread.start()
        if activatedListener != nil {
            logger.notice("serving \(library.root.path) on \(DaemonSocket.boundPath(fd) ?? "an unnamed socket") (socket activation)")
        } else {
            logger.notice("serving \(library.root.path) on \(socket.path)")
        }
    }

    /// Starts (or continues) `asset` for the daemon; with `deliver`, its finished file waits in
    /// the inbox until a client acknowledges it.
    public func download(_ asset: AssetDownload, deliver: Bool) {
        download(asset, deliver: deliver, claimant: nil)
    }

    /// Starts `asset`; with `deliver`, `claimant` (a connection) answers its challenges.
    private func download(_ asset: AssetDownload, deliver: Bool, claimant: Int?) {
        if deliver, let claimant { registry.state.withLock { $0.claimants[asset.identifier] = claimant } }
        if deliver {
            desk.claim(asset.identifier)
            library.local?.start(asset, delegate: desk)
        } else {
            library.local?.start(asset, delegate: nil)
        }
    }

    /// Stops accepting, disconnects every client, and releases files waiting for an
    /// acknowledgement (they stay in the inbox for the next run). Does not close the library.
    public func stop() {
        let (connections, events, progress) = registry.state.withLock { state in
            state.stopped = true
            defer { state.connections = [:] }
            return (Array(state.connections.values), state.events, state.progress)
        }
        events?.cancel()
        progress?.cancel()
        let fd = listener.withLock { fd -> Int32 in
            defer { fd = -1 }
            return fd
        }
        // systemd's socket stays as it is for the next activation (the accept thread, refusing
        // from now on, ends with the process).
        if fd >= 0, !activated.withLock({ $0 }) {
            shutdown(fd, Int32(SHUT_RDWR))
            unlink(socket.path)
        }
        for connection in connections { connection.close() }
        challenges.stop()
        desk.stop()
        DaemonRecord.remove(from: library.root)
    }

    // MARK: Connections

    private func acceptLoop(_ fd: Int32) {
        while true {
            let client = accept(fd, nil, nil)
            if client < 0 {
                if errno == EINTR || errno == ECONNABORTED { continue }
                if errno == EMFILE || errno == ENFILE {
                    logger.error("cannot accept a connection: \(SystemFailure.reason())")
                    usleep(100_000)
                    continue
                }
                break
            }
            _ = fcntl(client, F_SETFD, FD_CLOEXEC)
            admit(client)
        }
        close(fd)
    }

    /// Checks the peer and starts the connection's threads (or refuses it with an `ERROR`).
    func admit(_ client: Int32) {
        let peer = DaemonSocket.peerUID(client)
        let refusal: String? = if !DaemonSocket.admits(peer: peer, daemon: daemonUID) {
            "connection from uid \(peer.map(String.init) ?? "unknown") refused: this daemon serves uid \(daemonUID) only"
        } else {
            nil
        }
        let connection: DaemonConnection? = registry.state.withLock { state in
            guard !state.stopped, refusal == nil, state.connections.count < Self.maxConnections else { return nil }
            state.counter += 1
            let connection = DaemonConnection(fd: client, number: state.counter)
            state.connections[state.counter] = connection
            return connection
        }
        guard let connection else {
            let reason = refusal ?? "too many connections (at most \(Self.maxConnections))"
            logger.warning("\(reason)")
            let frame = DaemonProtocol.frame(DaemonProtocol.Kind.error, WireError(DaemonProtocol.ErrorCode.permissionDenied, reason))
            try? FrameWriter.write(frame, to: client, isSocket: true)
            close(client)
            return
        }
        connection.start(handle: { [self] frame in handle(frame, on: connection) }, ended: { [self] in
            registry.state.withLock { state in
                state.connections[connection.number] = nil
                state.claimants = state.claimants.filter { $0.value != connection.number }
            }
            challenges.connectionClosed(connection.number)
        })
    }

    // MARK: Library events

    /// An event to forward, or an answer that goes out after the events told before it.
    private enum Outgoing: Sendable {
        /// With the bytes of an asset that finished or was delivered, when they were in memory.
        case event(LibraryEvent, bytes: RunningTransfer?)
        case answer(Data, DaemonConnection)
    }

    /// Sends `frame` on `connection` after every event the library told before this call: for
    /// an answer that says what those events said (a `WAIT` answered once an asset settled).
    func sendAfterEvents(_ frame: Data, on connection: DaemonConnection) {
        if case .terminated = outbox.continuation.yield(.answer(frame, connection)) { connection.send(frame) }
    }

    /// `bytes`: the asset's bytes when the event was told (``LocalBackend/bytesInMemory(ofAsset:)``),
    /// else its status is read. `sizes`: which ends of a transfer tell its size.
    private func forward(_ event: LibraryEvent, bytes: RunningTransfer?, sizes: inout EndSizes) {
        switch event {
        case .assetStateChanged(let asset, let assetState):
            // A failure's reason and codes travel with its state (read here, off the library's
            // event path: failures are few).
            let failure: LibraryError? = if case .failed = assetState { asset.status?.failure } else { nil }
            // The whole size before the state that ends a transfer nobody claimed (a claimed
            // one's delegate sent each write): a transfer shorter than ``progressInterval`` sent
            // no progress, and a client would read 0 bytes for a delivered file where the
            // library in process reads its size.
            if sizes.tellsSize(asset.identifier, assetState), !desk.claims.contains(asset.identifier),
               let size = bytes.map({ ($0.totalBytesWritten, $0.expectedTotalBytes) })
                   ?? asset.status.map({ ($0.totalBytesWritten, $0.expectedTotalBytes) }), size.0 > 0 {
                broadcast(.progress(asset: asset.identifier, bytesWritten: 0, totalBytesWritten: size.0, expectedTotalBytes: size.1))
                sizes.told(asset.identifier, assetState)
            }
            broadcast(.state(asset: asset.identifier, issue: asset.issueName, state: WireState(assetState, failure: failure)))
            if case .cancelled = assetState { desk.release(asset.identifier) }
        case .issueDownloadCompleted(let issue):
            broadcast(.issueAvailable(issue: issue.name))
            broadcast(.badge(library.badgeCount))
        }
    }

    /// How often the bytes of transfers nobody claimed are sent to subscribers.
    static let progressInterval = Duration.milliseconds(250)

    /// Sends subscribers the bytes of each running transfer no client claimed (a claimed one's
    /// delegate sends each write), every ``progressInterval`` while someone is subscribed and
    /// the bytes moved: what a client shows as progress (`paperboy sync`'s live block) is the
    /// same as in process. Display only: nothing waits on it, so it sleeps on the system clock,
    /// not the library's (a test clock would count it as a sleeper).
    private func reportProgress() async {
        var sent: [String: Int64] = [:]
        while !Task.isCancelled {
            guard (try? await Task.sleep(for: Self.progressInterval)) != nil else { return }
            let listening = registry.state.withLock { $0.connections.values.contains { $0.isSubscribed } }
            guard listening else {
                sent = [:]
                continue
            }
            let claims = desk.claims
            var now: [String: Int64] = [:]
            // The running transfers alone, from memory: a backlog of 100,000 queued assets costs nothing.
            for transfer in library.local?.runningTransfers() ?? [] where !claims.contains(transfer.identifier) {
                let total = transfer.totalBytesWritten
                now[transfer.identifier] = total
                let before = sent[transfer.identifier]
                guard before != total else { continue }
                broadcast(.progress(asset: transfer.identifier, bytesWritten: max(0, total - (before ?? total)), totalBytesWritten: total,
                                    expectedTotalBytes: transfer.expectedTotalBytes))
            }
            sent = now
        }
    }

    private func broadcast(_ event: Event) {
        desk.broadcast(event)
    }

    // MARK: Requests

    /// Answers one frame; nothing a client sends can trap here.
    func handle(_ received: Frame, on connection: DaemonConnection) {
        var id: Int64?
        do {
            // Checked before anything decodes it: depth, size and counts (the connection goes on).
            let frame = try DaemonProtocol.request(received)
            id = DaemonProtocol.readableID(frame)
            if frame.kind == DaemonProtocol.Kind.hello {
                guard case .hello(let hello) = try Request(frame) else { return }
                self.hello(hello, on: connection)
                return
            }
            guard connection.isNegotiated else {
                throw WireError(DaemonProtocol.ErrorCode.notNegotiated, "\(frame.kind) before HELLO")
            }
            try DaemonProtocol.checkID(frame)
            let request = try Request(frame)
            // A page comes encoded already (``pageFrame(_:)``); any other answer is encoded here.
            if let encoded = try pageFrame(request) ?? answer(request, on: connection)?.frame {
                // An answer no frame holds (`STATUS` of a whole large library) is an error the
                // client can act on, not a closed connection.
                guard encoded.count <= DaemonProtocol.maxPayloadLength else {
                    throw WireError(DaemonProtocol.ErrorCode.frameTooLarge,
                                    "\(frame.kind): the answer (\(encoded.count) bytes) is larger than a frame (\(DaemonProtocol.maxPayloadLength)); "
                                        + "read the library a page at a time with SHELF and ASSETS")
                }
                connection.send(encoded)
            }
        } catch var error as WireError {
            error.id = error.id ?? id
            connection.sendError(error)
        } catch let error as LibraryError {
            connection.sendError(WireError(error, id: id))
        } catch {
            connection.sendError(WireError(DaemonProtocol.ErrorCode.badRequest, "\(received.kind): \(error)", id: id))
        }
    }

    /// Answers `HELLO`, the first or a later one alike (a later one changes nothing else).
    private func hello(_ hello: ClientHello, on connection: DaemonConnection) {
        guard let chosen = hello.protocols.filter(DaemonProtocol.versions.contains).max() else {
            connection.sendError(WireError(
                DaemonProtocol.ErrorCode.unsupportedVersion,
                "none of the versions \(hello.protocols.prefix(16)) is spoken; this daemon speaks \(DaemonProtocol.versions)"))
            connection.drainThenClose()
            return
        }
        connection.isNegotiated = true
        let reply = DaemonHello(protocol: chosen, paperboy: Self.version, library: library.root.path)
        connection.send(DaemonProtocol.frame(DaemonProtocol.Kind.hello, reply))
    }

    private func answer(_ request: Request, on connection: DaemonConnection) throws -> Reply? {
        switch request {
        case .hello(let hello):
            self.hello(hello, on: connection)
            return nil
        case .addIssue(let request):
            _ = try IssueName(request.name, door: "\(DaemonProtocol.Kind.addIssue) name")
            do {
                _ = try LibraryDate(request.date, door: "\(DaemonProtocol.Kind.addIssue) date")
            } catch {
                throw WireError(DaemonProtocol.ErrorCode.badRequest, error.message)
            }
            let issue = try served().addIssue(name: request.name, date: request.date)
            return .issue(IssueReply(id: request.id, issue: try Self.wire(issue, assets: false)))
        case .addAsset(let request):
            try Self.checkDestination(of: request.request, door: "\(DaemonProtocol.Kind.addAsset) destination_path")
            let issue = try existingIssue(request.issue)
            let asset = try served().addAssets([(request.request, request.userInfo)], toIssue: issue.name, downloading: false)[0]
            if request.download ?? false {
                download(asset, deliver: request.deliver ?? false, claimant: connection.number)
                try waitFor { [self] () async throws(LibraryError) in try await served().recorded(asset: asset.identifier) }
            }
            return .asset(AssetReply(id: request.id, asset: Self.wire(asset)))
        case .addAssets(let request):
            guard (1...DaemonProtocol.maxAssetsPerRequest).contains(request.assets.count) else {
                throw WireError(DaemonProtocol.ErrorCode.badRequest,
                                "\(DaemonProtocol.Kind.addAssets) assets: expected 1 to \(DaemonProtocol.maxAssetsPerRequest) assets, got \(request.assets.count)")
            }
            for (index, asset) in request.assets.enumerated() {
                try Self.checkDestination(of: asset.request, door: "\(DaemonProtocol.Kind.addAssets) assets[\(index)].request.destination_path")
            }
            let issue = try existingIssue(request.issue)
            // One transaction, every check first (the library's too): all are added or none. Queued
            // when downloading, unclaimed: delivered by the daemon, as `ADDASSET` with `download`.
            let assets = try served().addAssets(request.assets.map { ($0.request, $0.userInfo) }, toIssue: issue.name,
                                                downloading: request.download ?? false)
            return .addedAssets(AddAssetsReply(id: request.id, assets: assets.map(\.identifier)))
        case .download(let request), .resume(let request):
            // Answered once the change is committed, as in process (this thread waits, not the pool).
            let asset = try existingAsset(request.asset)
            download(asset, deliver: request.deliver ?? false, claimant: connection.number)
            try waitFor { [self] () async throws(LibraryError) in try await served().recorded(asset: asset.identifier) }
            return .asset(AssetReply(id: request.id, asset: Self.wire(asset)))
        case .pause(let request):
            let asset = try existingAsset(request.asset)
            try waitFor { [self] () async throws(LibraryError) in try await served().pause(asset: asset.identifier) }
            return .asset(AssetReply(id: request.id, asset: Self.wire(asset)))
        case .cancel(let request):
            let asset = try existingAsset(request.asset)
            desk.release(asset.identifier)
            try waitFor { [self] () async throws(LibraryError) in try await served().cancel(asset: asset.identifier) }
            return .asset(AssetReply(id: request.id, asset: Self.wire(asset)))
        case .ack(let request):
            guard desk.acknowledge(request.asset) else {
                throw WireError(DaemonProtocol.ErrorCode.notPending, "asset \(request.asset) has no file waiting for an acknowledgement")
            }
            return .empty(EmptyReply(id: request.id))
        case .status(let request):
            let subject: StatusReply.Subject
            if let id = request.asset {
                subject = .asset(Self.wire(try existingAsset(id)))
            } else if let name = request.issue {
                subject = .issue(try Self.wire(try existingIssue(name), assets: request.assets ?? true))
            } else {
                subject = .issues(try library.issues.map { try Self.wire($0, assets: request.assets ?? true) })
            }
            return .status(StatusReply(id: request.id, subject: subject, badge: library.badgeCount))
        case .subscribe(let request):
            connection.send(Reply.empty(EmptyReply(id: request.id)).frame)
            connection.subscribe(replaying: desk.pendingEvents())
            return nil
        case .notify(let request):
            try notify(request, on: connection)
            return nil
        case .answer(let request):
            try challenges.answer(request, from: connection.number)
            return .empty(EmptyReply(id: request.id))
        case .reload(let request):
            Task { [self] in
                do {
                    connection.send(Reply.reload(ReloadReply(id: request.id, addedIssues: try await reload())).frame)
                } catch {
                    connection.sendError(WireError(DaemonProtocol.ErrorCode.reloadFailed, "\(error)", id: request.id))
                }
            }
            return nil
        case .resumeWith(let request):
            try challenges.answer(request, original: { [library] in library.local?.lastKnownStatus(ofAsset: $0)?.request },
                                  from: connection.number)
            return .empty(EmptyReply(id: request.id))
        case .wait(let request):
            try wait(request, on: connection)
            return nil
        case .read, .purge, .remove, .markRead, .checksum, .activity:
            return try answerLibrary(request)
        case .shelf, .assets, .states, .counts:
            // Answered by ``pageFrame(_:)``, encoded once.
            return nil
        }
    }

    /// The issue named `name`; `issue-not-found` naming it when the library has none.
    func existingIssue(_ name: String) throws(LibraryError) -> Issue {
        guard let issue = try served().issue(named: name) else { throw LibraryError(.issueNotFound, "no issue named '\(name)'") }
        return issue
    }

    /// A request's `destination_path` checked at `door` (`ADDASSET destination_path`): one
    /// escaping the issue's folder is `invalid-path`.
    private static func checkDestination(of request: AssetRequest, door: String) throws(LibraryError) {
        if let path = request.destinationPath { _ = try RelativePath(path, door: door) }
    }

    private func existingAsset(_ id: String) throws(LibraryError) -> AssetDownload {
        guard let asset = try served().asset(identifier: id) else { throw LibraryError(.assetNotFound, "no asset with identifier '\(id)'") }
        return asset
    }

    /// The library's in-process backend: the request threads call it directly, without a hop to
    /// the cooperative pool.
    ///
    /// - Throws: ``LibraryError`` `.invalidRequest` for a library not opened in this process.
    func served() throws(LibraryError) -> LocalBackend {
        guard let local = library.local else {
            throw LibraryError(.invalidRequest, "the daemon serves a library opened in its own process, not \(library.root.path) through a daemon")
        }
        return local
    }

    /// The asset as one snapshot: state, progress, attempts and failure read together (a
    /// removed asset reads as cancelled, as ``AssetDownload/state`` does).
    static func wire(_ asset: AssetDownload) -> WireAsset {
        guard let status = asset.status else {
            return WireAsset(id: asset.identifier, issue: asset.issueName, request: nil, userInfo: nil, state: WireState(.cancelled),
                             totalBytesWritten: 0, expectedTotalBytes: nil, attempts: 0)
        }
        return WireAsset(status, issue: asset.issueName, userInfo: asset.userInfo)
    }

    static func wire(_ issue: Issue, assets: Bool) throws -> WireIssue {
        var wire = WireIssue(name: issue.name, date: issue.date, status: issue.status.rawValue, isNew: issue.isNew,
                             contentPath: issue.contentURL.path)
        if assets {
            wire.assets = try issue.assetStatuses.map { WireAsset($0, issue: issue.name) }
        }
        return wire
    }
}

/// Which state of an asset a daemon sends its size with (docs/Daemon.md, `progress`): once per
/// transfer, with its first `finished`, or with `delivered` when it was not sent then (a transfer
/// straight to its issue folder, or one whose size was not known at `finished`).
struct EndSizes {
    /// The assets now `finished` whose size went out with that state.
    private var toldAtFinish = Set<String>()

    /// Whether the size goes out with `state` of asset `id`; forgets `id` at any state but
    /// `finished` (the transfer has ended, or another began).
    mutating func tellsSize(_ id: String, _ state: AssetState) -> Bool {
        switch state {
        case .finished:
            return !toldAtFinish.contains(id)
        case .delivered:
            return toldAtFinish.remove(id) == nil
        default:
            toldAtFinish.remove(id)
            return false
        }
    }

    /// The size went out with `state` of asset `id`.
    mutating func told(_ id: String, _ state: AssetState) {
        if state == .finished { toldAtFinish.insert(id) }
    }
}
