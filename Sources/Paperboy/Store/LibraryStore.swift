import Foundation
import GRDB
import Synchronization

/// The library's SQLite database (WAL), with batched asset updates.
///
/// User-facing operations (adding an issue, adding assets) write synchronously. Progress and
/// state changes of transfers are queued with ``submit(_:whenRecorded:)`` and written together,
/// one transaction per batch, so bookkeeping never limits throughput; a command the app awaits
/// waits for the batch carrying its change with ``recorded(_:)``.
final class LibraryStore: Sendable {
    let pool: DatabasePool
    let fileURL: URL
    private let pending = Mutex<Pending>(Pending())
    private let queue = DispatchQueue(label: "paperboy.store.writer")
    private let batchDelay: DispatchTimeInterval

    private struct Pending {
        var patches: [String: AssetPatch] = [:]
        var order: [String] = []
        /// A timed write (after the batch delay, or a retry after a failed commit) is armed: it
        /// takes whatever is queued when it runs. Cleared by that write only, so that a write
        /// of another kind meanwhile does not arm a second timer (one transaction more).
        var flushScheduled = false
        /// Told when the batch holding their update is written, or given up.
        var waiters: [@Sendable (LibraryError?) -> Void] = []
        /// A write for the waiters is armed, due within ``waiterDelay``; cleared by that write only.
        var waiterFlushScheduled = false
        /// The assets of the batch being committed: their updates are no longer in `patches`.
        var inFlight: [String] = []
        /// The assets whose queued update someone waits for: a write for the waiters takes
        /// these only. The others (a transfer's start, its progress) wait for the timed write,
        /// or merge into their asset's next update before it: a small file's whole life is
        /// then one `UPDATE` instead of three or four.
        var urgent: Set<String> = []
    }
    /// How long an update someone waits for may wait for others to share its commit: a
    /// delivery is reported this much later at most, and deliveries finishing together share
    /// one transaction.
    private static let waiterDelay = DispatchTimeInterval.milliseconds(2)
    /// What made a batch be written: an armed write clears its own flag when it takes the batch
    /// (see ``Pending``).
    private enum Trigger { case timer, waiters, now }
    /// Where ``submit(_:whenRecorded:)``'s callbacks run: not the writer's queue, so that they
    /// may read, flush and write.
    private let notifications = DispatchQueue(label: "paperboy.store.recorded")

    /// Consecutive failed commits of queued updates before the failure is reported; the delay
    /// between two doubles from the batch delay (25, 50, 100, 200, 400 ms by default).
    static let commitAttempts = 6
    private let commitFailures = Mutex<Int>(0)
    /// Commits of queued updates that failed since the store was opened (tests wait for one).
    let failedCommits = Atomic<Int>(0)
    /// Timed writes (batch delay, retry) armed since the store was opened (tests count them).
    let armedTimedWrites = Atomic<Int>(0)
    /// Told (on a queue of its own) when queued updates could not be committed after
    /// ``commitAttempts`` tries: the error and the assets whose updates are not recorded. The
    /// updates stay queued and are written with the next batch that succeeds.
    let onCommitFailure = LockedFunction<@Sendable (LibraryError, [String]) -> Void>()

    /// Held while a batch is taken and committed, and while a read takes its overlay and reads:
    /// a read sees each update either in the database or in the overlay, never in neither.
    private let commitLock = Mutex<Void>(())

    /// How long a queued update waits for others to share its commit, unless someone waits for it.
    static let defaultBatchDelay = DispatchTimeInterval.milliseconds(25)

    init(fileURL: URL, readOnly: Bool = false, batchDelay: DispatchTimeInterval = defaultBatchDelay) throws(LibraryError) {
        self.fileURL = fileURL
        self.batchDelay = batchDelay
        var configuration = Configuration()
        configuration.readonly = readOnly
        configuration.foreignKeysEnabled = true
        configuration.busyMode = .timeout(10)
        configuration.prepareDatabase { db in
            // WAL + NORMAL: commits survive a process crash; a power loss may lose the last
            // batch, which only means a little re-transfer (offsets are recorded after fsync).
            if !readOnly { try db.execute(sql: "PRAGMA synchronous = NORMAL") }
        }
        do {
            // A database created here has every migration of this build: neither checked nor
            // migrated again below (one connection and a read fewer at each new library).
            var created = false
            if !readOnly, !FileManager.default.fileExists(atPath: fileURL.path) {
                try Self.createMigrated(at: fileURL, configuration: configuration)
                created = true
            }
            if !readOnly, !created, FileManager.default.fileExists(atPath: fileURL.path) {
                // Checked through a read-only connection first: closing a writer's connection may
                // checkpoint the WAL into a database this build must leave untouched.
                try Self.recoveringIfNeeded(fileURL) {
                    var reading = Configuration()
                    reading.readonly = true
                    // Another connection may hold a lock for a moment (a closing one checkpoints).
                    reading.busyMode = .timeout(10)
                    let connection = try DatabaseQueue(path: fileURL.path, configuration: reading)
                    defer { try? connection.close() }
                    try connection.read { db in try Migrations.check(db, file: fileURL, readOnly: false) }
                }
            }
            let pool = try Self.recoveringIfNeeded(fileURL, when: readOnly) {
                let pool = try DatabasePool(path: fileURL.path, configuration: configuration)
                if readOnly { try pool.read { db in try Migrations.check(db, file: fileURL, readOnly: true) } }
                return pool
            }
            if !readOnly, !created {
                try Migrations.migrator.migrate(pool)
            }
            self.pool = pool
        } catch let error as LibraryError {
            throw error
        } catch {
            throw LibraryError.storage("cannot open library database \(fileURL.path)", error)
        }
        for suffix in ["", "-wal", "-shm"] {
            chmod(fileURL.path + suffix, 0o600)
        }
    }

    /// Runs `read`, a read through a read-only connection (when `readOnly`); if SQLite says it cannot read without
    /// writing (a process killed while writing left a hot journal to roll back, or a WAL index to
    /// rebuild: `SQLITE_READONLY_ROLLBACK`, `_RECOVERY`, `_CANTINIT`), a read-write connection
    /// opens the database once, which makes SQLite restore the last committed state, as any later
    /// writer would, and `read` runs again. Without this, a `sync` killed at the wrong moment left
    /// a library that neither `status` nor the next `sync` could open.
    static func recoveringIfNeeded<T>(_ fileURL: URL, when readOnly: Bool = true, _ read: () throws -> T) throws -> T {
        do {
            return try read()
        } catch let error as DatabaseError where readOnly && error.resultCode == .SQLITE_READONLY {
            var recovering = Configuration()
            recovering.busyMode = .timeout(10)
            let connection = try DatabaseQueue(path: fileURL.path, configuration: recovering)
            // Reading the schema is what makes SQLite roll back or rebuild; nothing is written.
            _ = try connection.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM sqlite_master") }
            try connection.close()
            return try read()
        }
    }

    /// Creates a new library database whole: migrated in a file of its own next to `fileURL`,
    /// then renamed into place, durably (``AtomicFile/replace(_:mode:durable:build:)``). A process
    /// killed meanwhile leaves no database, never one half migrated, which a read-only command
    /// (`status`) would refuse until a `sync` finished the migrations; the leftover file is
    /// replaced by the next try.
    private static func createMigrated(at fileURL: URL, configuration: Configuration) throws {
        try AtomicFile.replace(fileURL) { fresh in
            for suffix in ["-wal", "-shm", "-journal"] { unlink(fresh.path + suffix) }
            let queue = try DatabaseQueue(path: fresh.path, configuration: configuration)
            // In WAL mode from its first byte: switching a database in place to WAL is a write with a
            // rollback journal, and a kill then left a hot journal that read-only opens cannot roll back.
            try queue.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA journal_mode = WAL") }
            // No sync per migration (a commit each): the file is unseen until the rename, which
            // follows one fsync of the whole (``AtomicFile``). On ext4 the migrations' own syncs
            // were most of a new library's start.
            try queue.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA synchronous = OFF") }
            try Migrations.migrator.migrate(queue)
            // Everything in the database file itself before it is synced and renamed: a WAL
            // left beside the temporary file would not follow it.
            try queue.writeWithoutTransaction { db in
                let row = try Row.fetchOne(db, sql: "PRAGMA wal_checkpoint(TRUNCATE)")
                let (busy, log, done): (Int, Int, Int) = (row?[0] ?? 1, row?[1] ?? -1, row?[2] ?? -2)
                guard busy == 0, log == done else {
                    throw LibraryError(.storage, "cannot checkpoint the new library database \(fresh.path) (busy \(busy), \(done) of \(log) frames)")
                }
            }
            try queue.close()
        }
    }

    // MARK: Issues

    func insertIssue(_ record: IssueRecord) throws(LibraryError) {
        do {
            try pool.write { db in
                if let damaged = try Self.damagedIssue(named: record.name.text, in: db, path: fileURL.path) {
                    throw LibraryError(.storage, "damaged row in \(fileURL.path): \(damaged)")
                }
                if try IssueRecord.filter(key: record.name.text).fetchCount(db) > 0 {
                    throw LibraryError(.duplicateIssue, "an issue named '\(record.name)' already exists")
                }
                try record.insert(db)
            }
        } catch let error as LibraryError {
            throw error
        } catch {
            throw LibraryError.storage("cannot add issue '\(record.name)'", error)
        }
    }

    func issue(named name: String) -> IssueRecord? {
        try? pool.read { db in try IssueRecord.fetchOne(db, key: name) }
    }

    /// The issues that can be read, newest first (see ``damagedRows()`` for the others).
    func issues() -> [IssueRecord] {
        (try? pool.read { db in
            try Self.readableIssues(Row.fetchCursor(db, sql: "SELECT * FROM issue ORDER BY date DESC, name DESC"))
        }) ?? []
    }

    func deleteIssue(named name: String) throws(LibraryError) {
        flush()
        do {
            _ = try pool.write { db in try IssueRecord.deleteOne(db, key: name) }
        } catch {
            throw LibraryError.storage("cannot remove issue '\(name)'", error)
        }
    }

    func updateIssue(named name: String, _ change: @Sendable @escaping (inout IssueRecord) -> Void) {
        _ = try? pool.write { db in
            guard var record = try IssueRecord.fetchOne(db, key: name) else { return }
            change(&record)
            try record.update(db)
        }
    }

    func countNewIssues() -> Int {
        (try? pool.read { db in try IssueRecord.filter(Column("isNew") == true).fetchCount(db) }) ?? 0
    }

    // MARK: Assets

    func insertAssets(_ records: [AssetRecord]) throws(LibraryError) {
        do {
            try pool.write { db in
                // One prepared statement for the batch (GRDB's per-record insert builds a
                // container and looks the statement up for each row).
                let columns = AssetRecord.columnNames
                let statement = try db.cachedStatement(sql: """
                    INSERT INTO asset (\(columns.joined(separator: ", "))) \
                    VALUES (\(Array(repeating: "?", count: columns.count).joined(separator: ", ")))
                    """)
                for record in records {
                    try statement.execute(arguments: StatementArguments(try record.columnValues()))
                }
            }
        } catch {
            throw LibraryError.storage("cannot add assets", error)
        }
    }

    func nextAssetSeq() -> Int64 {
        // A damaged row may hold a huge seq: later assets still get one without overflowing.
        let last = (try? pool.read { db in try Row.fetchOne(db, sql: "SELECT MAX(seq) FROM asset")?.storedInteger(atIndex: 0) }) ?? nil
        return min(last ?? 0, Int64.max / 2) + 1
    }

    func asset(id: String) -> AssetRecord? {
        overlaid { (try? pool.read { db in try AssetRecord.fetch(id: id, in: db) }).map { [$0] } ?? [] }.first
    }

    func assets(issueName: String) -> [AssetRecord] {
        overlaid {
            (try? pool.read { db in
                try Self.readableAssets(AssetRecord.filter(Column("issueName") == issueName).order(Column("seq")), in: db)
            }) ?? []
        }
    }

    /// The identifiers of an issue's assets, in the order they were added (no row decoding).
    func assetIDs(issueName: String) -> [String] {
        // Rows are inserted and deleted with a flush, never through pending patches.
        (try? pool.read { db in
            // A damaged identifier (a blob) is left out; ``damagedRows()`` names it.
            try Row.fetchAll(db, sql: "SELECT id FROM asset WHERE issueName = ? AND typeof(id) = 'text' ORDER BY seq",
                             arguments: [issueName]).compactMap { try? $0.decode(String.self, atIndex: 0) }
        }) ?? []
    }

    /// The rows with these identifiers (in chunks: SQLite bounds a statement's arguments). A read
    /// that fails is an error, never "no assets": the reconciler removes every file no asset owns.
    func assets(ids: [String]) throws(LibraryError) -> [AssetRecord] {
        try reading { db in
            var records: [AssetRecord] = []
            for start in stride(from: 0, to: ids.count, by: 500) {
                let chunk = Array(ids[start..<min(start + 500, ids.count)])
                records += try Self.readableAssets(AssetRecord.filter(chunk.contains(Column("id"))), in: db)
            }
            return records
        }
    }

    /// The rows in one of `states`, oldest first (after writing the updates queued).
    func assets(inStates states: [PersistedState]) throws(LibraryError) -> [AssetRecord] {
        flush()
        return try reading { db in
            try Self.readableAssets(AssetRecord.filter(states.map(\.rawValue).contains(Column("state"))).order(Column("seq")), in: db)
        }
    }

    /// The rows a reconciler checks besides those of the files it finds: finished ones (their
    /// inbox file may be gone) and those counting bytes of a partial file.
    func assetsHoldingFiles() throws(LibraryError) -> [AssetRecord] {
        flush()
        return try reading { db in
            // `state != 'delivered'` as two ranges of the (state, …) index: a library at rest
            // (every asset delivered) reads no row, where `!=` scanned the table (100,000 rows).
            try Self.readableAssets(AssetRecord.filter(sql: """
                state = 'finished' OR ((state < 'delivered' OR state > 'delivered') AND bytesOnDisk > 0)
                """), in: db)
        }
    }

    /// Queued assets in the order they run (highest priority, then first in), at most `limit`
    /// of them besides those in `excluded`: the scheduler's next in line, from the index on
    /// (state, priority, seq). Updates not yet written count as written: an asset they queue is
    /// written first (else the read would miss it), the others are read through them, so the
    /// scheduler, which calls this under its lock, waits for no commit.
    func queuedAssets(limit: Int, excluding excluded: Set<String>) throws(LibraryError) -> [AssetRecord] {
        let queuesOthers = pending.withLock { pending in
            pending.patches.values.contains { $0.state == .queued && !excluded.contains($0.id) }
        }
        if queuesOthers { flush() }
        return try commitLock.withLock { _ throws(LibraryError) in
            let patches = pending.withLock { $0.patches }
            // Not queued any more by an update not yet written (started, delivered, cancelled).
            let gone = patches.values.filter { $0.state.map { $0 != .queued } ?? false }.map(\.id)
            let skipped = gone.isEmpty ? excluded : excluded.union(gone)
            let records = try reading("cannot read the queued assets of library database \(fileURL.path)") { db in
                try Self.readableAssets(AssetRecord.filter(Column("state") == PersistedState.queued.rawValue)
                    .order(Column("priority").desc, Column("seq")).limit(limit + skipped.count), in: db,
                    skipping: skipped, limit: limit)
            }
            guard !patches.isEmpty else { return records }
            return records.map { record in
                guard let patch = patches[record.id] else { return record }
                var record = record
                patch.apply(to: &record)
                return record
            }
        }
    }

    /// The identifiers and issues of assets in one of `states`, oldest first.
    func assetIDs(inStates states: [PersistedState]) -> [(id: String, issueName: String)] {
        flush()
        return (try? pool.read { db in
            try Row.fetchAll(db, sql: "SELECT id, issueName FROM asset WHERE state IN (\(states.map { "'\($0.rawValue)'" }.joined(separator: ", "))) ORDER BY seq")
                .compactMap { row in
                    guard let id = try? row.decode(String.self, atIndex: 0), let issue = try? row.decode(String.self, atIndex: 1) else { return nil }
                    return (id, issue)
                }
        }) ?? []
    }

    /// Makes `change` to every asset in its `from` states (at open: what was running), but those
    /// of `except` (held in memory, in a state of their own).
    func changeStates(_ change: AssetLifecycle.BulkChange, except: [String] = []) throws(LibraryError) {
        flush()
        do {
            try pool.write { db in
                var sql = "UPDATE asset SET state = ? WHERE state IN (\(Self.list(change.from)))"
                if !except.isEmpty { sql += " AND id NOT IN (\(databaseQuestionMarks(count: except.count)))" }
                try db.execute(sql: sql, arguments: StatementArguments([change.to.rawValue] + except))
            }
        } catch {
            throw LibraryError.storage("cannot update the assets of library database \(fileURL.path)", error)
        }
    }

    /// States as an SQL list of literals (their raw values are fixed words, never input).
    private static func list(_ states: [PersistedState]) -> String {
        states.map { "'\($0.rawValue)'" }.joined(separator: ", ")
    }

    /// The earliest retry among the assets waiting to retry but those of `except` (held in
    /// memory), `nil` when there is none; a retry of unreadable date is due now.
    func earliestRetry(now: Date, except: [String] = []) throws(LibraryError) -> Date? {
        flush()
        let filter = except.isEmpty ? "" : " AND id NOT IN (\(databaseQuestionMarks(count: except.count)))"
        return try reading("cannot read the retries of library database \(fileURL.path)") { db -> Date? in
            guard let row = try Row.fetchOne(db, sql: """
                SELECT COUNT(*), MIN(CASE WHEN typeof(retryAt) = 'text' THEN retryAt END), SUM(CASE WHEN typeof(retryAt) = 'text' THEN 1 ELSE 0 END)
                FROM asset WHERE state = 'retry'\(filter)
                """, arguments: StatementArguments(except)), let count = row.storedInteger(atIndex: 0), count > 0 else { return nil }
            let readable = row.storedInteger(atIndex: 2) ?? 0
            guard readable == count, let earliest = (try? row.decode(StoredDate?.self, atIndex: 1))??.date else { return now }
            return earliest
        }
    }

    /// Queues the assets whose retry is due at `now` (or whose retry date is unreadable, or more
    /// than a day away: a damaged row), but those of `except`; returns how many.
    func queueDueRetries(now: Date, except: [String] = []) throws(LibraryError) -> Int {
        flush()
        let filter = except.isEmpty ? "" : " AND id NOT IN (\(databaseQuestionMarks(count: except.count)))"
        let change = AssetLifecycle.storedRetriesDue
        do {
            return try pool.write { db in
                try db.execute(sql: """
                    UPDATE asset SET state = ? WHERE state IN (\(Self.list(change.from)))\(filter)
                    AND (typeof(retryAt) != 'text' OR retryAt <= ? OR retryAt > ?)
                    """, arguments: StatementArguments([change.to.rawValue] + except
                                                       + [StoredDate(now), StoredDate(now.addingTimeInterval(86_400))]))
                return db.changesCount
            }
        } catch {
            throw LibraryError.storage("cannot queue the retries of library database \(fileURL.path)", error)
        }
    }

    /// Whether an issue has an asset the database does not record as delivered.
    func hasUndeliveredAssets(issueName: String) -> Bool {
        (try? pool.read { db in
            try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM asset WHERE issueName = ? AND state != 'delivered')",
                              arguments: [issueName])
        }) ?? true
    }

    /// Counts and bytes of the assets by state, after writing the updates queued.
    private func reading<T>(_ read: (Database) throws -> T) throws(LibraryError) -> T {
        try reading("cannot read the assets of library database \(fileURL.path)", read)
    }

    /// Runs a read; a failure is a ``LibraryError`` saying `what` could not be done.
    func reading<T>(_ what: @autoclosure () -> String, _ read: (Database) throws -> T) throws(LibraryError) -> T {
        do {
            return try pool.read(read)
        } catch {
            throw LibraryError.storage(what(), error)
        }
    }

    /// Reads, then applies the updates not yet written, so reads see the latest state.
    func overlaid(_ read: () -> [AssetRecord]) -> [AssetRecord] {
        commitLock.withLock { _ in
            let records = read()
            return pending.withLock { pending in
                guard !pending.patches.isEmpty else { return records }
                return records.map { record in
                    var record = record
                    if let patch = pending.patches[record.id] { patch.apply(to: &record) }
                    return record
                }
            }
        }
    }

    /// Runs `read` under the commit lock with the updates queued and not yet written: a read
    /// inside sees each update either in the database or among those updates.
    func withQueuedPatches<T>(_ read: ([String: AssetPatch]) throws -> T) rethrows -> T {
        try commitLock.withLock { _ in
            try read(pending.withLock { $0.patches })
        }
    }

    /// Runs `read` under the commit lock with the state changes queued and not yet written: a
    /// read inside sees each update either in the database or among those changes.
    func withQueuedStates<T, E: Error>(_ read: ([String: PersistedState]) throws(E) -> T) throws(E) -> T {
        try commitLock.withLock { _ throws(E) in
            try read(pending.withLock { pending in pending.patches.compactMapValues(\.state) })
        }
    }

    /// Replaces an asset's stored request (written at once, not batched).
    func updateRequest(id: String, _ request: AssetRequest) throws(LibraryError) {
        do {
            let columns = AssetRecord.requestColumnNames
            let values = try AssetRecord.requestValues(request) + [id]
            try pool.write { db in
                try db.execute(sql: "UPDATE asset SET \(columns.map { "\($0) = ?" }.joined(separator: ", ")) WHERE id = ?",
                               arguments: StatementArguments(values))
            }
        } catch {
            throw LibraryError.storage("cannot record the new request of asset \(id)", error)
        }
    }

    // MARK: Meta

    func meta(_ key: String) -> String? {
        try? pool.read { db in try String.fetchOne(db, sql: "SELECT value FROM meta WHERE key = ?", arguments: [key]) }
    }

    func setMeta(_ key: String, _ value: String?) throws(LibraryError) {
        do {
            try pool.write { db in
                if let value {
                    try db.execute(sql: "INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value", arguments: [key, value])
                } else {
                    try db.execute(sql: "DELETE FROM meta WHERE key = ?", arguments: [key])
                }
            }
        } catch {
            throw LibraryError.storage("cannot record '\(key)'", error)
        }
    }

    // MARK: Batched updates

    /// Queues a partial update; written with others in one transaction shortly after.
    ///
    /// - Parameter whenRecorded: called (on a queue of the store's) once the batch holding the
    ///   update is committed (`nil`), or with the error when the store gave up after
    ///   ``commitAttempts`` tries (the update then stays queued).
    func submit(_ patch: AssetPatch, whenRecorded: (@Sendable (LibraryError?) -> Void)? = nil) {
        var soon = false
        let schedule = pending.withLock { pending -> Bool in
            if let whenRecorded {
                pending.waiters.append(whenRecorded)
                pending.urgent.insert(patch.id)
                soon = !pending.waiterFlushScheduled
                pending.waiterFlushScheduled = true
            }
            if pending.patches[patch.id] != nil {
                pending.patches[patch.id]!.merge(patch)
            } else {
                pending.patches[patch.id] = patch
                pending.order.append(patch.id)
            }
            if pending.flushScheduled { return false }
            pending.flushScheduled = true
            return true
        }
        if soon {
            queue.asyncAfter(deadline: .now() + Self.waiterDelay) { [self] in _ = writeBatch(.waiters) }
        }
        if schedule {
            armedTimedWrites.add(1, ordering: .relaxed)
            queue.asyncAfter(deadline: .now() + batchDelay) { [self] in _ = writeBatch(.timer) }
        }
    }

    /// Returns once every update of asset `id` queued so far is committed, at once when none is
    /// queued or being committed; never blocks a thread.
    ///
    /// The write is asked for at once, not after the batch delay: a command the app awaits pays
    /// one commit, and the updates queued while a batch is committed share the next one (group
    /// commit), so commands given together cost few transactions.
    ///
    /// - Throws: ``LibraryError`` `.storage` when the store gave up after ``commitAttempts``
    ///   tries (the updates stay queued).
    func recorded(_ id: String) async throws(LibraryError) {
        let error = await withCheckedContinuation { (continuation: CheckedContinuation<LibraryError?, Never>) in
            let schedule = pending.withLock { pending -> Bool? in
                guard pending.patches[id] != nil || pending.inFlight.contains(id) else { return nil }
                // Told with the batch after the one in flight, which the writer's queue runs after it.
                pending.waiters.append { continuation.resume(returning: $0) }
                if pending.patches[id] != nil { pending.urgent.insert(id) }
                defer { pending.waiterFlushScheduled = true }
                return !pending.waiterFlushScheduled
            }
            switch schedule {
            case nil: continuation.resume(returning: nil)
            case true?: queue.async { [self] in _ = writeBatch(.waiters) }
            case false?: break
            }
        }
        if let error { throw error }
    }

    /// Writes every queued update now; the error if they could not be (they stay queued).
    @discardableResult
    func flush() -> LibraryError? {
        queue.sync { writeBatch() }
    }

    /// Writes every queued update, without blocking a thread of the cooperative pool.
    func flushAsync() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            queue.async { [self] in
                _ = writeBatch()
                continuation.resume()
            }
        }
    }

    /// Commits the queued updates; the error if they could not be (they stay queued).
    private func writeBatch(_ trigger: Trigger = .now) -> LibraryError? {
        let (error, told) = commitLock.withLock { _ in writeBatchLocked(trigger) }
        if !told.isEmpty {
            notifications.async { for waiter in told { waiter(error) } }
        }
        return error
    }

    private func retryDelay(afterFailures failures: Int) -> Int {
        let base: Int
        switch batchDelay {
        case .milliseconds(let value): base = value
        case .seconds(let value): base = value * 1000
        default: base = 25
        }
        return max(base, 1) << min(failures - 1, 10)
    }

    /// Commits the queued updates: the error if they could not be, and the waiters to tell
    /// (those of the batch when it was written or given up; the others stay queued).
    private func writeBatchLocked(_ trigger: Trigger) -> (LibraryError?, [@Sendable (LibraryError?) -> Void]) {
        let (batch, waiters) = pending.withLock { pending -> ([AssetPatch], [@Sendable (LibraryError?) -> Void]) in
            // A write for the waiters takes the updates they wait for; the rest wait for the
            // timed write (``Pending/urgent``). Any other write takes everything.
            let taken: [String]
            if trigger == .waiters, pending.urgent.count < pending.order.count {
                taken = pending.order.filter { pending.urgent.contains($0) }
                pending.order.removeAll { pending.urgent.contains($0) }
            } else {
                taken = pending.order
                pending.order = []
            }
            let batch = taken.compactMap { pending.patches.removeValue(forKey: $0) }
            let waiters = pending.waiters
            pending.inFlight = taken
            pending.urgent = []
            pending.waiters = []
            switch trigger {
            case .timer: pending.flushScheduled = false
            case .waiters: pending.waiterFlushScheduled = false
            case .now: break
            }
            return (batch, waiters)
        }
        guard !batch.isEmpty else { return (nil, waiters) }
        do {
            try pool.write { db in
                for patch in batch { try Self.apply(patch, in: db) }
            }
            pending.withLock { $0.inFlight = [] }
            commitFailures.withLock { $0 = 0 }
            return (nil, waiters)
        } catch {
            failedCommits.add(1, ordering: .relaxed)
            let failures = commitFailures.withLock { count -> Int in
                count += 1
                return count
            }
            let givingUp = failures >= Self.commitAttempts
            // Never dropped: the updates go back under any queued since, and are tried again
            // (after a failure is reported, with the next batch or flush).
            let retry = pending.withLock { pending -> Bool in
                pending.inFlight = []
                if !givingUp {
                    pending.waiters = waiters + pending.waiters
                    if !waiters.isEmpty { pending.urgent.formUnion(batch.map(\.id)) }
                }
                for patch in batch {
                    var merged = patch
                    if let later = pending.patches[patch.id] { merged.merge(later) }
                    pending.patches[patch.id] = merged
                }
                let ids = Set(batch.map(\.id))
                pending.order = batch.map(\.id) + pending.order.filter { !ids.contains($0) }
                if pending.flushScheduled || givingUp { return false }
                pending.flushScheduled = true
                return true
            }
            let ids = batch.map(\.id)
            let failure = LibraryError.storage("cannot record the progress of \(ids.count == 1 ? "asset \(ids[0])" : "\(ids.count) assets") in library database \(fileURL.path)", error)
            if failures == 1 {
                FileHandle.standardError.write(Data("paperboy: \(failure.message); trying again\n".utf8))
            }
            if givingUp {
                commitFailures.withLock { $0 = 0 }
                FileHandle.standardError.write(Data("paperboy: gave up recording after \(Self.commitAttempts) attempts: \(failure.message)\n".utf8))
                if let handler = onCommitFailure.function {
                    DispatchQueue.global().async { handler(failure, ids) }
                }
            }
            if retry {
                armedTimedWrites.add(1, ordering: .relaxed)
                queue.asyncAfter(deadline: .now() + .milliseconds(retryDelay(afterFailures: failures))) { [self] in _ = writeBatch(.timer) }
            }
            return (failure, givingUp ? waiters : [])
        }
    }

    private static func apply(_ patch: AssetPatch, in db: Database) throws {
        var assignments: [String] = []
        var arguments: [(any DatabaseValueConvertible)?] = []
        if let state = patch.state { assignments.append("state = ?"); arguments.append(state.rawValue) }
        if let detail = patch.detail { assignments.append("detail = ?"); arguments.append(detail) }
        if let retryAt = patch.retryAt { assignments.append("retryAt = ?"); arguments.append(retryAt.map(StoredDate.init)) }
        if let attempts = patch.attempts { assignments.append("attempts = ?"); arguments.append(attempts) }
        if let bytes = patch.bytesOnDisk { assignments.append("bytesOnDisk = ?"); arguments.append(bytes) }
        if let expected = patch.expectedBytes { assignments.append("expectedBytes = ?"); arguments.append(expected) }
        if let validator = patch.validator {
            assignments.append("validator = ?"); arguments.append(validator?.value)
            assignments.append("validatorStrength = ?"); arguments.append(validator?.strength.rawValue)
        }
        if let boot = patch.checkpointBoot { assignments.append("checkpointBoot = ?"); arguments.append(boot) }
        if let reused = patch.bytesReused { assignments.append("bytesReused = ?"); arguments.append(reused > 0 ? reused : nil) }
        if let segments = patch.segmentsChange { assignments.append("segments = ?"); arguments.append(segments?.stored) }
        if let failure = patch.failureChange {
            assignments.append("failureCode = ?, transportCode = ?, failureReason = ?, failureRetryable = ?")
            arguments += [failure?.code, failure?.transportCode, failure?.reason, failure?.retryable]
        }
        if let chunks = patch.chunks { try recordChunks(chunks, of: patch.id, in: db) }
        guard !assignments.isEmpty else { return }
        arguments.append(patch.id)
        let statement = try db.cachedStatement(sql: "UPDATE asset SET \(assignments.joined(separator: ", ")) WHERE id = ?")
        try statement.execute(arguments: StatementArguments(arguments))
    }
}
