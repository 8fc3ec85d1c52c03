#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import Logging
import Synchronization

/// The persistent collection of issues and their downloads: the analog of NKLibrary.
///
/// A library owns one folder (private to the user) holding its database, the issues' content
/// folders, partial downloads and the inbox of finished files not yet delivered. Open it once
/// per process; a second process opening the same folder gets a clear error.
///
/// ```swift
/// let library = try Library.open(at: folder, transports: TransportRegistry([FileTransport()]))
/// let issue = try await library.addIssue(name: "2026-11-21", date: .now)
/// let asset = try await issue.addAsset(AssetRequest(url: source, destinationPath: "magazine.pdf"))
/// try await asset.download(delegate: myDelegate)
/// ```
///
/// At launch, reconnect with `for asset in try await library.downloadingAssets() { try await
/// asset.download(delegate: d) }`: transfers interrupted by a crash continue from the bytes
/// really on disk, and finished files that were never handed over are delivered again.
///
/// A library is served by a backend: this process's own scheduler and database
/// (``open(at:transports:configuration:)``), or a paperboy daemon (`Library.connect(socket:name:clock:)`
/// in the module `PaperboyClient`). The asynchronous methods of `Library`, ``Issue`` and ``AssetDownload`` work
/// the same both ways. The synchronous properties (``issues``, ``badgeCount``,
/// ``AssetDownload/state``…) are in-process conveniences: live in this process, and through a
/// daemon what it last reported. Members that drive this process's own scheduler
/// (``bandwidthLimiter``, ``waitUntilIdle(includingNetworkWaits:retryWaitLimit:)``,
/// ``fetchData(from:maxBytes:options:)``…) work in-process only and say what they do otherwise.
public final class Library: Sendable {
    /// How a library schedules and records its work.
    public struct Configuration: Sendable {
        /// Transfers running at once, all hosts together.
        public var maxConcurrentTransfers: Int = 4
        /// Transfers running at once against one host.
        public var maxTransfersPerHost: Int = 4
        /// How retryable failures are tried again: `retry.maxAttempts` counts consecutive attempts
        /// without progress (an attempt that advanced the durable offset restarts the count), and
        /// `retry.noProgressTimeout`, off by default, bounds the time without progress.
        public var retry = RetryPolicy()
        /// The shortest time between two progress events of one download.
        public var progressInterval: Duration = .milliseconds(100)
        /// How often a running transfer makes its bytes durable and records their count: what a
        /// power loss can cost is about this much transfer time (`[library] checkpoint_interval`).
        public var checkpointInterval: Duration = .milliseconds(500)
        /// Connections one asset may use at once, 1 to 16 (`[scheduler] connections_per_asset`,
        /// passed to transports as `TransferJob.connectionsPerAsset`): a transport that can
        /// fetch ranges (HTTP) splits a large file over this many. The per-host limit
        /// (``maxTransfersPerHost``) counts transfers, not connections.
        public var connectionsPerAsset: Int = 1
        /// Time allowed to connect (passed to transports).
        public var connectTimeout: Duration = .seconds(30)
        /// Time without a byte after which a transfer counts as stalled (passed to transports).
        public var idleTimeout: Duration = .seconds(60)
        /// The largest `userInfo` accepted, measured as JSON.
        public var maxUserInfoBytes: Int = 64 * 1024
        /// The most bytes one archive (`unpack: .zip`) may unpack to, the declared sizes of all
        /// its entries together: 20 GiB by default, ten times the largest magazine issues. Checked
        /// before anything is written, as is the free space of the library's file system.
        public var maxUnpackedBytes: Int64 = defaultMaxUnpackedBytes
        /// The most an archive may unpack to, as a multiple of its own size: 200 by default.
        /// Pages, images and PDFs barely compress and markup compresses about 10:1, while a
        /// deflate bomb reaches 1,000:1. Archives unpacking to at most 1 MiB are not checked.
        public var maxUnpackRatio: Int = defaultMaxUnpackRatio
        /// The default of ``maxUnpackedBytes``: 20 GiB.
        public static let defaultMaxUnpackedBytes: Int64 = 20 << 30
        /// The default of ``maxUnpackRatio``: 200.
        public static let defaultMaxUnpackRatio = 200
        /// The free space the library leaves on its file system: downloads and unpacking stop
        /// with ``LibraryError/Code/insufficientStorage`` before writing below it, so that the
        /// database can still record why. By default 256 MiB or 1 % of the file system,
        /// whichever is larger (``FreeSpaceFloor/default`` says why).
        public var minFreeSpace: FreeSpaceFloor = .default
        /// Whether transfers interrupted by a crash or by ``Library/close()`` continue at open.
        public var resumesOnOpen: Bool = true
        /// Whether finished files with a destination path (or to unpack) that wait in the inbox
        /// are delivered at open. With `false` they wait for ``AssetDownload/download(delegate:)``:
        /// a daemon that hands files to its clients attaches its own delegate first.
        public var deliversFinishedFilesOnOpen: Bool = true
        /// Whether bytes are synced to disk at each checkpoint and before delivery, so that a
        /// power loss loses nothing recorded. With `false`, a process crash (kill -9) still loses
        /// nothing; a power loss may lose or corrupt recent bytes (a SHA-256 check catches it).
        public var syncsToDisk: Bool = true
        /// Tests only: the current boot's identifier (see ``BootIdentity``).
        var bootIdentity: @Sendable () -> String? = { BootIdentity.current() }
        /// Tests only: the random part of each retry's delay, in `0...1` (see
        /// ``RetryPolicy/delay(afterFailedAttempts:retryAfter:random:)``); `{ _ in 1 }` makes
        /// every delay the full exponential one, so that a test knows each retry's date.
        var retryJitter: @Sendable (ClosedRange<Double>) -> Double = { Double.random(in: $0) }
        /// Tests only: how long the store's queued updates wait to be written together (see
        /// ``LibraryStore``); an hour leaves in the database only what the library commits on purpose,
        /// as a kill at any instant would.
        var storeBatchDelay: DispatchTimeInterval = LibraryStore.defaultBatchDelay
        /// Credentials tried before the app's delegate is asked.
        public var credentials: (any CredentialProvider)?
        /// Where the library logs.
        public var logger = Logger(label: "paperboy")
        /// The global bandwidth limit in bytes per second (`nil`: unlimited), shared fairly by
        /// every transfer of every transport. A ``bandwidthSchedule`` replaces it.
        public var bandwidthLimit: Int64?
        /// A limit applied to each transfer on its own (`nil`: none); requests may set their own.
        public var perTransferBandwidthLimit: Int64?
        /// A time-of-day schedule for the global limit.
        public var bandwidthSchedule: BandwidthSchedule?
        /// Foreground or background: in the background, the default network policy is
        /// ``NetworkPolicy/unmeteredOnly`` (NewsstandKit downloaded over Wi-Fi only in the background).
        public var mode: Mode = .foreground
        /// The default network policy; `nil` takes the mode's default.
        public var networkPolicy: NetworkPolicy?
        /// Where the network status comes from; `nil` reads Linux state, or the `PAPERBOY_NETWORK`
        /// environment variable when it is set (such as `cellular,expensive`).
        public var networkMonitor: (any NetworkMonitor)?
        /// Where the library reads the time and waits (retries, timeouts, the limiter, throttles):
        /// the system's clocks unless a test passes its own (PaperboyTesting's `TestClock`).
        public var clock: any LibraryClock = SystemClock()

        /// Whether the app is in front of the user.
        public enum Mode: String, Sendable {
            case foreground, background
        }

        /// The defaults.
        public init() {}
    }

    /// The library's folder (the daemon's, through a daemon).
    public let root: URL
    /// What serves the library: ``LocalBackend`` in-process.
    package let backend: any LibraryBackend
    private let lockDescriptor: Mutex<Int32>

    /// A library served by `backend` (a daemon's, say).
    package convenience init(backend: any LibraryBackend) {
        self.init(backend: backend, lockDescriptor: -1)
    }

    private init(backend: any LibraryBackend, lockDescriptor: Int32) {
        root = backend.root
        self.backend = backend
        self.lockDescriptor = Mutex(lockDescriptor)
    }

    /// The in-process backend; `nil` for a library opened through a daemon.
    package var local: LocalBackend? { backend as? LocalBackend }

    /// The scheduler of an in-process library, for code and tests of this module that work on
    /// its internals; public members reach it through ``local`` and never trap.
    var scheduler: Scheduler {
        guard let local else { fatalError("Library.scheduler: \(root.path) is not opened in this process") }
        return local.scheduler
    }

    deinit {
        releaseLock()
    }

    private func releaseLock() {
        lockDescriptor.withLock { fd in
            if fd >= 0 { POSIX.closeFile(fd) }
            fd = -1
        }
    }

    /// Opens the library in `folder`, creating it if needed, and resumes interrupted work.
    ///
    /// - Parameters:
    ///   - folder: the library's root folder (created with mode 0700).
    ///   - transports: the transports assets may use.
    ///   - configuration: scheduling and recording settings.
    /// - Throws: ``LibraryError`` when the folder or database cannot be used, or another process
    ///   has the library open.
    public static func open(
        at folder: URL, transports: TransportRegistry, configuration: Configuration = Configuration()
    ) throws(LibraryError) -> Library {
        let layout = LibraryLayout(root: folder.standardizedFileURL)
        try layout.create()
        let lockURL = layout.root.appendingPathComponent(".lock")
        let lock = Glibc.open(lockURL.path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard lock >= 0 else {
            throw LibraryError(.storage, SystemFailure.message("cannot open", lockURL.path))
        }
        // A child process forked by this one holds a copy of the lock until it calls exec: retry
        // briefly before concluding that another process has the library open.
        var attempts = 0
        while flock(lock, LOCK_EX | LOCK_NB) != 0 {
            attempts += 1
            if attempts < 20, errno == EWOULDBLOCK || errno == EINTR {
                usleep(50_000)
                continue
            }
            POSIX.closeFile(lock)
            throw LibraryError(.storage, "the library at \(layout.root.path) is open in another process")
        }
        let store: LibraryStore
        do {
            store = try LibraryStore(fileURL: layout.database, batchDelay: configuration.storeBatchDelay)
        } catch {
            POSIX.closeFile(lock)
            throw error
        }
        let monitor: any NetworkMonitor
        if let given = configuration.networkMonitor {
            monitor = given
        } else {
            do {
                monitor = try defaultNetworkMonitor()
            } catch {
                POSIX.closeFile(lock)
                throw error
            }
        }
        let scheduler = Scheduler(store: store, layout: layout, transports: transports, settings: configuration,
                                  networkMonitor: monitor)
        do {
            try Reconciler(
                store: store, layout: layout, logger: configuration.logger, bootID: scheduler.bootID,
                syncsToDisk: configuration.syncsToDisk
            ).reconcile()
            try scheduler.load(resume: configuration.resumesOnOpen, deliverFinished: configuration.deliversFinishedFilesOnOpen)
        } catch {
            POSIX.closeFile(lock)
            throw error
        }
        scheduler.startBackgroundWork()
        return Library(backend: LocalBackend(scheduler: scheduler), lockDescriptor: lock)
    }

    /// The Linux monitor, or a fixed status from `PAPERBOY_NETWORK`.
    static func defaultNetworkMonitor() throws(LibraryError) -> any NetworkMonitor {
        if let forced = ProcessInfo.processInfo.environment["PAPERBOY_NETWORK"], !forced.isEmpty {
            do {
                return FixedNetworkMonitor(try NetworkStatus.parse(forced))
            } catch {
                throw LibraryError(.invalidRequest, "PAPERBOY_NETWORK: \(error.message)")
            }
        }
        return LinuxNetworkMonitor()
    }

    /// Opens an existing library to read its state while another process may be using it.
    ///
    /// Nothing is resumed, reconciled or written; transfers running elsewhere show the bytes
    /// recorded at their last checkpoint (about once a second).
    ///
    /// - Throws: ``LibraryError`` `.storage` when there is no library in `folder`.
    public static func openForReading(at folder: URL) throws(LibraryError) -> Library {
        let layout = LibraryLayout(root: folder.standardizedFileURL)
        guard POSIX.exists(layout.database) else {
            throw LibraryError(.storage, "no library at \(layout.root.path) (run 'paperboy sync' first)")
        }
        let store = try LibraryStore(fileURL: layout.database, readOnly: true)
        // Nothing runs: no network to follow, nothing to sync.
        var configuration = Configuration()
        configuration.syncsToDisk = false
        let scheduler = Scheduler(store: store, layout: layout, transports: TransportRegistry(), settings: configuration,
                                  networkMonitor: FixedNetworkMonitor(NetworkStatus(kind: .other)))
        return Library(backend: LocalBackend(scheduler: scheduler), lockDescriptor: -1)
    }

    // MARK: Issues

    /// Adds an issue.
    ///
    /// - Throws: ``LibraryError`` `.duplicateIssue` if the name is taken; `.invalidIssueName` for a
    ///   name that cannot be a folder name (``IssueName``: empty, a leading `.`, a `/` or `\`,
    ///   control or bidi characters, more than 255 bytes, look-alikes); `.invalidRequest` for a date outside years 1 to 9999
    ///   in UTC (``LibraryDate``); `.storage` when a damaged row holds the name (``damagedRows``).
    @discardableResult
    public func addIssue(name: String, date: Date) async throws(LibraryError) -> Issue {
        try await backend.addIssue(name: name, date: date)
    }

    /// The issue named `name`, if any.
    ///
    /// - Throws: ``LibraryError`` when a daemon cannot be reached.
    public func issue(named name: String) async throws(LibraryError) -> Issue? {
        try await backend.issue(named: name)
    }

    /// Every issue, newest first. An issue whose row cannot be read is left out, never hides the
    /// others: ``damagedRows`` names it. Through a daemon, the issues it last reported.
    public var issues: [Issue] { backend.lastKnownIssues() }

    /// Every issue, newest first; an issue whose row cannot be read is left out (``damagedRows``).
    ///
    /// - Throws: ``LibraryError`` when a daemon cannot be reached.
    public func issues() async throws(LibraryError) -> [Issue] {
        try await backend.issues()
    }

    /// The rows of the library's database that cannot be read back (issues, then assets), each
    /// with the SQL that removes it. Every other read leaves them out: ``issues``,
    /// ``issue(named:)``, ``Issue/assets``, listings, counts and ``purge(keep:budgetBytes:)`` go on
    /// with the rest, and an asset whose state cannot be read reads as failed. Empty for a sound
    /// library; a listing shows these next to what it lists, and a sync reports them.
    ///
    /// - Throws: ``LibraryError`` `.storage` when the database cannot be read at all;
    ///   `.invalidRequest` through a daemon (its listings carry them).
    public var damagedRows: [DamagedRow] {
        get throws(LibraryError) {
            guard let local else { throw LibraryError.inProcessOnly("Library.damagedRows") }
            return try local.store.damagedRows()
        }
    }

    /// Removes an issue: cancels its downloads (their delegates get a `.cancelled` failure),
    /// deletes its content folder and its records.
    public func removeIssue(_ issue: Issue) async throws(LibraryError) {
        try await backend.removeIssue(named: issue.name)
    }

    /// Assets asked for and not yet delivered (waiting, downloading, or finished in the inbox);
    /// through a daemon, those it last reported.
    ///
    /// At launch, call ``AssetDownload/download(delegate:)`` on each to reconnect.
    public var downloadingAssets: [AssetDownload] { backend.lastKnownDownloadingAssets() }

    /// Assets asked for and not yet delivered (waiting, downloading, or finished in the inbox).
    ///
    /// At launch, call ``AssetDownload/download(delegate:)`` on each to reconnect.
    ///
    /// - Throws: ``LibraryError`` when a daemon cannot be reached.
    public func downloadingAssets() async throws(LibraryError) -> [AssetDownload] {
        try await backend.downloadingAssets()
    }

    /// The asset with this identifier, if it still exists.
    ///
    /// - Throws: ``LibraryError`` when a daemon cannot be reached.
    public func asset(identifier: String) async throws(LibraryError) -> AssetDownload? {
        try await backend.asset(identifier: identifier)
    }

    /// The issue the user is reading; it is never purged. Through a daemon, the one it last reported.
    public var currentlyReadingIssue: Issue? { backend.lastKnownCurrentlyReadingIssue() }

    /// The issue the user is reading; it is never purged.
    ///
    /// - Throws: ``LibraryError`` when a daemon cannot be reached.
    public func currentlyReadingIssue() async throws(LibraryError) -> Issue? {
        try await backend.currentlyReadingIssue()
    }

    /// Records the issue the user is reading (`nil` for none).
    public func setCurrentlyReadingIssue(_ issue: Issue?) async throws(LibraryError) {
        try await backend.setCurrentlyReadingIssue(named: issue?.name)
    }

    /// How many issues are new (available and not marked read); through a daemon, the count it
    /// last reported.
    public var badgeCount: Int { backend.lastKnownBadgeCount() }

    /// How many issues are new (available and not marked read).
    ///
    /// - Throws: ``LibraryError`` when a daemon cannot be reached.
    public func badgeCount() async throws(LibraryError) -> Int {
        try await backend.badgeCount()
    }

    // MARK: Events and lifetime

    /// Library-wide events from now on: issues completed, assets changing state.
    ///
    /// - Throws: ``LibraryError`` when a daemon cannot be reached.
    public func events() async throws(LibraryError) -> AsyncStream<LibraryEvent> {
        try await backend.events(where: nil)
    }

    /// Library-wide events from now on that `wants` accepts: the others are never queued for
    /// this stream, so a subscriber that wants few events does not wake for the rest (a sync of
    /// 1,000 files changes asset states about 4,000 times).
    ///
    /// ```swift
    /// let failures = try await library.events { event in
    ///     if case .assetStateChanged(_, .failed) = event { true } else { false }
    /// }
    /// ```
    ///
    /// - Parameter wants: called once per event, on the thread that tells it (through a daemon,
    ///   in this process as events arrive): keep it quick, never block in it, and do not call
    ///   the library from it (it runs while the library tells the event).
    /// - Throws: ``LibraryError`` when a daemon cannot be reached.
    public func events(where wants: @escaping @Sendable (LibraryEvent) -> Bool) async throws(LibraryError) -> AsyncStream<LibraryEvent> {
        try await backend.events(where: wants)
    }

    /// Returns once nothing is queued, downloading, waiting for a retry or being delivered.
    /// Through a daemon it returns at once (wait for each asset with
    /// ``AssetDownload/waitUntilFinished()`` there).
    ///
    /// - Parameters:
    ///   - includingNetworkWaits: also wait for assets waiting for an allowed network
    ///     (by default they do not count: they may wait for hours).
    ///   - retryWaitLimit: retries due later than it allows do not count either (they keep
    ///     waiting in the library); by default every retry is waited for.
    public func waitUntilIdle(includingNetworkWaits: Bool = false, retryWaitLimit: RetryWaitLimit? = nil) async {
        await local?.scheduler.waitUntilIdle(includingNetworkWaits: includingNetworkWaits, retryWaitLimit: retryWaitLimit)
    }

    // MARK: Policies

    /// The global bandwidth limiter: read its ``BandwidthLimiter/statistics``, or change the
    /// limit at run time with ``BandwidthLimiter/setBytesPerSecond(_:)``. Through a daemon, an
    /// unlimited limiter of its own that governs no transfer (the daemon's limit is set in its
    /// configuration).
    public var bandwidthLimiter: BandwidthLimiter {
        local?.scheduler.limiter ?? BandwidthLimiter(bytesPerSecond: nil)
    }

    /// Follows a time-of-day schedule for the global limit from now on (`nil`: stop following
    /// it). Does nothing through a daemon.
    public func setBandwidthSchedule(_ schedule: BandwidthSchedule?) {
        local?.scheduler.setSchedule(schedule)
    }

    /// Changes the limit of each transfer on its own, running ones included (`nil`: none).
    /// Does nothing through a daemon.
    public func setPerTransferBandwidthLimit(_ bytesPerSecond: Int64?) {
        local?.scheduler.setPerTransferLimit(bytesPerSecond)
    }

    /// The network status the scheduler works with; through a daemon, whose scheduler decides,
    /// an unknown network (``NetworkStatus/Kind/other``).
    public var networkStatus: NetworkStatus {
        local?.scheduler.state.withLock { $0.network } ?? NetworkStatus(kind: .other)
    }

    /// The limiter statistics recorded by the process that has the library open (about once a
    /// second), for reading from another process; `nil` through a daemon.
    public var recordedBandwidthStatistics: BandwidthLimiter.Statistics? {
        local?.recordedBandwidthStatistics
    }

    /// Stops running transfers (their bytes are kept and continue at the next open) and writes
    /// everything pending to the database. Through a daemon, closes the connection; the
    /// daemon's downloads go on.
    public func close() async {
        await backend.close()
        releaseLock()
    }
}
