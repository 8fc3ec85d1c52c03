import Foundation
import GRDB

/// One row of the `issue` table.
struct IssueRecord: Sendable, FetchableRecord, PersistableRecord {
    static let databaseTableName = "issue"
    /// Made at the door (``IssueName``), and checked again when read back.
    var name: IssueName
    /// Made at the door (``LibraryDate``): only dates the store reads back are written.
    var date: LibraryDate
    var addedAt: Date
    var isNew: Bool
    var coverPath: RelativePath?
}

// In an extension, so that the memberwise initializer stays.
extension IssueRecord {
    // Coded by hand, dates through ``StoredDate`` (GRDB's `Codable` path formats them with ICU).
    init(row: Row) throws {
        // Decoded with errors, not GRDB's trapping subscripts: an unreadable name or date fails
        // the read of this row (``RowDamage``, reported as a ``DamagedRow``), and a damaged flag
        // or cover path reads as none.
        func damage(_ column: String) -> RowDamage { RowDamage(column: column, value: row[column]) }
        // The name becomes a folder: read back, it keeps the rule it was written under (`..`
        // would be the library itself).
        guard let text = try? row.decode(String.self, forColumn: "name"), let name = try? IssueName(text, door: "its name") else {
            throw damage("name")
        }
        guard let date = try? row.decode(StoredDate.self, forColumn: "date") else { throw damage("date") }
        guard let addedAt = try? row.decode(StoredDate.self, forColumn: "addedAt") else { throw damage("addedAt") }
        self.name = name
        self.date = LibraryDate(stored: date.date)
        self.addedAt = addedAt.date
        isNew = row.storedInteger("isNew").map { $0 != 0 } ?? false
        // A path the cover is opened at: one that would leave the issue folder reads as none.
        coverPath = (try? row.decode(String?.self, forColumn: "coverPath"))?.flatMap { try? RelativePath($0, door: "its cover path") }
    }

    func encode(to container: inout PersistenceContainer) throws {
        container["name"] = name.text
        container["date"] = StoredDate(date.date)
        container["addedAt"] = StoredDate(addedAt)
        container["isNew"] = isNew
        container["coverPath"] = coverPath?.text
    }
}

/// One row of the `asset` table: the request in typed columns, the asset's state and progress.
///
/// Rows are read and written column by column rather than through `Codable`: a sync reads
/// every asset of an issue several times, and GRDB's generic row decoder cost about 25 µs a row.
struct AssetRecord: Sendable, FetchableRecord, PersistableRecord {
    static let databaseTableName = "asset"
    var id: String
    var issueName: String
    var seq: Int64
    var request: AssetRequest
    /// Why the stored request cannot be read, for a damaged row (its ``request`` then asks for
    /// ``unreadableURL``).
    var requestFailure: String?
    /// The app's userInfo, as JSON bytes.
    var userInfo: Data?
    /// One of ``PersistedState``'s raw values.
    var state: String
    /// The failure message, when failed.
    var detail: String?
    /// The failure's codes, when failed.
    var failure: StoredFailure?
    var retryAt: Date?
    var attempts: Int
    /// Bytes of the partial file known to be durable (fsynced before this was recorded).
    var bytesOnDisk: Int64
    var expectedBytes: Int64?
    var validator: String?
    var validatorStrength: String?
    /// The boot (``BootIdentity``) in which the last checkpoint was recorded, when the partial
    /// file has been written in order since: in that boot, its bytes past ``bytesOnDisk`` are
    /// trusted too. `nil` when it was written out of order (segments) or never checkpointed.
    var checkpointBoot: String?
    /// Bytes of the file last finished copied from files the library held (``AssetStatus/bytesReused``).
    var bytesReused: Int64 = 0
    /// Ranges past ``bytesOnDisk`` made durable and recorded with ``validator`` (``RecordedSegments``).
    var segments: RecordedSegments?

    /// The progress count of the asset while nothing transfers it (``AssetStatus/totalBytesWritten``).
    var bytesKept: Int64 { Self.bytesKept(bytesOnDisk: bytesOnDisk, segments: segments) }

    /// The progress count of bytes on disk without a gap and `segments` past them: all of them,
    /// as a split download showed them while it ran, not the gap-free prefix alone.
    static func bytesKept(bytesOnDisk: Int64, segments: RecordedSegments?) -> Int64 {
        bytesOnDisk + (segments?.bytes ?? 0)
    }

    init(
        id: String, issueName: String, seq: Int64, request: AssetRequest, userInfo: Data?, state: String,
        detail: String?, retryAt: Date?, attempts: Int, bytesOnDisk: Int64, expectedBytes: Int64?,
        validator: String?, validatorStrength: String?, checkpointBoot: String? = nil
    ) {
        self.id = id
        self.issueName = issueName
        self.seq = seq
        self.request = request
        self.userInfo = userInfo
        self.state = state
        self.detail = detail
        self.retryAt = retryAt
        self.attempts = attempts
        self.bytesOnDisk = bytesOnDisk
        self.expectedBytes = expectedBytes
        self.validator = validator
        self.validatorStrength = validatorStrength
        self.checkpointBoot = checkpointBoot
    }

    static let unreadableURL = URL(string: "unreadable:request")!

    /// Reads the columns by position: rows come from the query interface, which selects
    /// ``databaseSelection`` (every column, in the order of ``columnNames``). Looking each
    /// column up by name cost more than reading it.
    init(row: Row) throws {
        // Text through GRDB's throwing decoding, numbers leniently and range-checked: a damaged
        // or hostile row must not trap (GRDB's subscripts do on a value of another type).
        guard let id = try? row.decode(String.self, atIndex: 0) else { throw RowDamage(column: "id", value: row[0]) }
        guard let issueName = try? row.decode(String.self, atIndex: 1) else { throw RowDamage(column: "issueName", value: row[1]) }
        self.id = id
        self.issueName = issueName
        seq = row.storedInteger(atIndex: 2) ?? 0
        do {
            request = try Self.request(row, issueName: issueName)
            requestFailure = nil
        } catch {
            request = AssetRequest(url: Self.unreadableURL)
            requestFailure = error.message
        }
        // A damaged userInfo reads as none; a damaged state reads as failed (below): the row is
        // reported by ``LibraryStore/damagedRows()`` either way.
        userInfo = (try? row.decode(Data?.self, atIndex: 16)) ?? nil
        let storedState = try? row.decode(String.self, atIndex: 17)
        state = storedState ?? PersistedState.failed.rawValue
        detail = try? row.decode(String?.self, atIndex: 18)
        failure = (try? row.decode(String?.self, atIndex: 19))?.map { code in
            StoredFailure(code: code, transportCode: try? row.decode(String?.self, atIndex: 20),
                          reason: try? row.decode(String?.self, atIndex: 21), retryable: row.storedInteger(atIndex: 22).map { $0 != 0 })
        }
        if let requestFailure {
            // A damaged row reads as failed: this asset cannot run, the others can.
            state = PersistedState.failed.rawValue
            detail = "the stored request of asset \(id) is unreadable (\(requestFailure)); remove and add the asset again"
            failure = StoredFailure(LibraryError(.storage, ""))
        } else if storedState.flatMap(PersistedState.init(rawValue:)) == nil {
            // Asking for the asset again writes a state it can read.
            state = PersistedState.failed.rawValue
            detail = "its state \(DamagedRow.literal(row[17])) cannot be read; download the asset again, or remove it"
            failure = StoredFailure(LibraryError(.storage, ""))
        }
        // An unreadable or absurd retry date means "retry now".
        retryAt = (try? row.decode(StoredDate?.self, atIndex: 23))??.date
        attempts = Int(min(max(0, row.storedInteger(atIndex: 24) ?? 0), Self.maxStoredAttempts))
        bytesOnDisk = ByteCount(stored: row.storedInteger(atIndex: 25))?.bytes ?? 0
        expectedBytes = ByteCount(stored: row.storedInteger(atIndex: 26))?.bytes
        validator = try? row.decode(String?.self, atIndex: 27)
        validatorStrength = try? row.decode(String?.self, atIndex: 28)
        checkpointBoot = try? row.decode(String?.self, atIndex: 29)
        // Column 30, `mirrors`, is part of the request (read above).
        bytesReused = ByteCount(stored: row.storedInteger(atIndex: 32))?.bytes ?? 0
        segments = (try? row.decode(String?.self, atIndex: 33))?.flatMap(RecordedSegments.init(stored:))
    }

    /// The request in columns 3 to 15; its issue name and destination path keep ``IssueName``'s
    /// and ``RelativePath``'s rules, as when they were written: read back, they become paths.
    private static func request(_ row: Row, issueName: String) throws(LibraryError) -> AssetRequest {
        func unreadable(_ what: String) -> LibraryError { LibraryError(.storage, "its \(what) is unreadable") }
        func refused(_ error: LibraryError) -> LibraryError { LibraryError(.storage, "its \(error.message)") }
        do { _ = try IssueName(issueName, door: "issue name") } catch { throw refused(error) }
        // An absolute URL, as stored (a damaged row may hold a number, or the migration's marker).
        let stored: DatabaseValue = row[3]
        guard case .string(let text) = stored.storage, let url = URL(string: text), url.scheme != nil,
              url != unreadableURL else { throw unreadable("URL") }
        var request = AssetRequest(url: url)
        request.destinationPath = try? row.decode(String?.self, atIndex: 4)
        if let path = request.destinationPath {
            do { _ = try RelativePath(path, door: "destination path") } catch { throw refused(error) }
        }
        request.sha256 = try? row.decode(String?.self, atIndex: 5)
        if let unpack = try? row.decode(String?.self, atIndex: 6) {
            guard let format = UnpackFormat(rawValue: unpack) else { throw unreadable("unpack format") }
            request.unpack = format
        }
        request.role = (try? row.decode(String.self, atIndex: 7)).flatMap(AssetRole.init(rawValue:)) ?? .content
        request.priority = row.storedInteger(atIndex: 8).flatMap { Int(exactly: $0) } ?? 0
        request.maxBytesPerSecond = ByteCount.storedRate(row.storedInteger(atIndex: 9))
        let kinds = (try? row.decode(String?.self, atIndex: 10))?.map { text in
            Set(text.split(separator: ",").compactMap { NetworkStatus.Kind(rawValue: String($0)) })
        }
        let flags = (11...13).map { index in row.storedInteger(atIndex: index).map { $0 != 0 } }
        if kinds != nil || flags.contains(where: { $0 != nil }) {
            request.network = NetworkPolicyOverride(allowedKinds: kinds, allowsExpensive: flags[0],
                                                    allowsConstrained: flags[1], allowsRoaming: flags[2])
        }
        request.headers = try strings(row, 14, "headers")
        request.options = try strings(row, 15, "options")
        if let text = (try? row.decode(String?.self, atIndex: 30)) ?? nil {
            guard let index = URL(string: text), index.scheme != nil else { throw unreadable("index URL") }
            request.index = index
        }
        request.mirrors = try mirrors(row, 31)
        return request
    }

    /// A JSON array of absolute URLs (the mirrors): NULL when empty.
    private static func mirrors(_ row: Row, _ index: Int) throws(LibraryError) -> [URL] {
        guard let text = try? row.decode(String?.self, atIndex: index) else { return [] }
        let texts: [String]
        do {
            texts = try JSONReader("its mirrors", limits: .stateFile).decode([String].self, from: Data(text.utf8))
        } catch let error as JSONInputError {
            throw LibraryError(.storage, "\(error.description)")
        } catch {
            throw LibraryError(.storage, "its mirrors are unreadable (\(error))")
        }
        return try texts.map { text throws(LibraryError) in
            guard let url = URL(string: text), url.scheme != nil else { throw unreadableMirror }
            return url
        }
    }

    private static let unreadableMirror = LibraryError(.storage, "its mirrors are unreadable")

    /// A JSON object of strings (headers, options): NULL when empty. Listings read theirs with it
    /// too (``AssetListing/init(plainRow:now:)``), so a row reads as damaged in both or in neither.
    static func strings(_ row: Row, _ index: Int, _ what: String) throws(LibraryError) -> [String: String] {
        guard let text = try? row.decode(String?.self, atIndex: index) else { return [:] }
        do {
            return try JSONReader("its \(what)", limits: .stateFile).decode([String: String].self, from: Data(text.utf8))
        } catch let error as JSONInputError {
            throw LibraryError(.storage, "\(error.description)")
        } catch {
            throw LibraryError(.storage, "its \(what) are unreadable (\(error))")
        }
    }

    private static func json(_ strings: [String: String]) throws -> String? {
        guard !strings.isEmpty else { return nil }
        return String(decoding: try JSONCoding.stored.encoder.encode(strings), as: UTF8.self)
    }

    static var databaseSelection: [any SQLSelectable] { columnNames.map { Column($0) } }

    /// The row of asset `id`, through a statement prepared once per connection: the query
    /// interface's `fetchOne(db, key:)` generates, authorizes and prepares its SQL on every call
    /// (about 70 µs, most of the report's reads after a sync of 1,000 small files over TLS).
    static func fetch(id: String, in db: Database) throws -> AssetRecord? {
        let statement = try db.cachedStatement(sql: "SELECT \(columnNames.joined(separator: ", ")) FROM asset WHERE id = ?")
        return try AssetRecord.fetchOne(statement, arguments: [id])
    }

    /// The most attempts a row is read with (a damaged row could hold `Int64.max`, and the
    /// count is incremented).
    static let maxStoredAttempts: Int64 = 1 << 20

    /// The table's columns, in the order of ``columnValues()``.
    static let columnNames = [
        "id", "issueName", "seq", "url", "destinationPath", "sha256", "unpack", "role", "priority",
        "maxBytesPerSecond", "networkKinds", "networkExpensive", "networkConstrained", "networkRoaming", "headers",
        "options", "userInfo", "state", "detail", "failureCode", "transportCode", "failureReason", "failureRetryable", "retryAt", "attempts",
        "bytesOnDisk", "expectedBytes", "validator", "validatorStrength", "checkpointBoot", "indexURL", "mirrors",
        "bytesReused", "segments",
    ]

    /// The columns of the request (``requestValues(_:)``): `url` to `options`, `indexURL` and `mirrors`.
    static let requestColumnNames = Array(columnNames[3...15]) + ["indexURL", "mirrors"]

    /// The request's column values, in the order of ``requestColumnNames``.
    static func requestValues(_ request: AssetRequest) throws -> [(any DatabaseValueConvertible)?] {
        let network = request.network
        return [
            request.url.absoluteString, request.destinationPath, request.sha256, request.unpack?.rawValue,
            request.role.rawValue, request.priority, request.maxBytesPerSecond,
            network?.allowedKinds.map { $0.map(\.rawValue).sorted().joined(separator: ",") },
            network?.allowsExpensive, network?.allowsConstrained, network?.allowsRoaming,
            try json(request.headers), try json(request.options), request.index?.absoluteString,
            request.mirrors.isEmpty ? nil : String(decoding: try JSONCoding.stored.encoder.encode(request.mirrors.map(\.absoluteString)), as: UTF8.self),
        ]
    }

    /// The row's values, in the order of ``columnNames``.
    func columnValues() throws -> [(any DatabaseValueConvertible)?] {
        let request = try Self.requestValues(request)
        return [id, issueName, seq] + request.dropLast(2)
            + [userInfo, state, detail, failure?.code, failure?.transportCode, failure?.reason, failure?.retryable, retryAt.map(StoredDate.init),
               attempts, bytesOnDisk, expectedBytes, validator, validatorStrength, checkpointBoot] + request.suffix(2)
            + [bytesReused > 0 ? bytesReused : nil, segments?.stored]
    }

    func encode(to container: inout PersistenceContainer) throws {
        for (name, value) in zip(Self.columnNames, try columnValues()) { container[name] = value }
    }

    var resourceValidator: ResourceValidator? {
        guard let validator else { return nil }
        return ResourceValidator(validator, strength: ResourceValidator.Strength(rawValue: validatorStrength ?? "") ?? .weak)
    }

    /// Why the asset failed, rebuilt from its stored message and codes; `nil` unless failed.
    var libraryError: LibraryError? {
        guard state == PersistedState.failed.rawValue else { return nil }
        let message = detail ?? "asset \(id) failed"
        return failure?.error(message: message) ?? LibraryError(.transport, message)
    }
}

/// A failure as stored with its asset (its message is the asset's `detail`): the
/// ``LibraryError`` read back after a reopen is the one recorded, reason and all.
struct StoredFailure: Sendable, Hashable {
    /// The ``LibraryError/Code`` raw value.
    var code: String
    /// The ``TransportError/Code`` raw value, when a transport failed.
    var transportCode: String?
    /// The ``LibraryError/Reason`` raw value (`nil` in a row a damaged or foreign writer left:
    /// then it is decided from the codes).
    var reason: String?
    /// ``LibraryError/isRetryable`` (`nil`: no).
    var retryable: Bool?

    init(code: String, transportCode: String?, reason: String?, retryable: Bool?) {
        self.code = code
        self.transportCode = transportCode
        self.reason = reason
        self.retryable = retryable
    }

    init(_ error: LibraryError) {
        code = error.code.rawValue
        transportCode = error.transportCode?.rawValue
        reason = error.reason.rawValue
        retryable = error.isRetryable
    }

    func error(message: String) -> LibraryError {
        let code = LibraryError.Code(code)
        let transport = transportCode.map(TransportError.Code.init)
        return LibraryError(code, message, isRetryable: retryable ?? false,
                            reason: reason.map(LibraryError.Reason.init) ?? LibraryError.Reason(code: code, transportCode: transport),
                            transportCode: transport)
    }
}

/// The states as stored in the database.
enum PersistedState: String, Sendable, CaseIterable {
    case idle, queued, paused, retry, network, downloading, finished, delivered, failed, cancelled
}

/// A partial update of one asset row; `nil` fields are left alone.
struct AssetPatch: Sendable, Equatable {
    var id: String
    var state: PersistedState?
    var detail: String??
    var retryAt: Date??
    var attempts: Int?
    var bytesOnDisk: Int64?
    var expectedBytes: Int64??
    var validator: ResourceValidator??
    var checkpointBoot: String??
    /// Bytes of the finished file copied from files the library held.
    var bytesReused: Int64?
    /// The chunks of the file the asset finished with (its index's), replacing those the chunk
    /// table holds for it (``LibraryStore/recordChunks(_:of:in:)``); `[]` drops them.
    var chunks: [ChunkIndex.Chunk]?
    /// The failure's codes; a patch that changes the state without them clears them.
    var failure: StoredFailure??
    /// The ranges held past ``bytesOnDisk`` (``RecordedSegments``); a patch that records bytes on
    /// disk or a validator without them clears them (``segmentsChange``).
    var segments: RecordedSegments??

    init(id: String) { self.id = id }

    /// Marks the asset failed with `error`: state, message and codes.
    mutating func fail(_ error: LibraryError) {
        state = .failed
        detail = .some(error.message)
        failure = .some(StoredFailure(error))
    }

    /// The failure to record: the patch's own, or none when it changes the state without one.
    var failureChange: StoredFailure?? { failure ?? (state != nil ? .some(nil) : nil) }

    /// The held ranges to record: the patch's own, or none when it records bytes on disk or a
    /// validator without them. Held ranges are true only of the bytes and the version they were
    /// recorded with: whatever changes those (a truncation, another version, a cancel) without
    /// saying which ranges are still held forgets them.
    var segmentsChange: RecordedSegments?? {
        segments ?? (bytesOnDisk != nil || validator != nil ? .some(nil) : nil)
    }

    /// Applies this patch to a record read from the database.
    func apply(to record: inout AssetRecord) {
        if let state { record.state = state.rawValue }
        if let detail { record.detail = detail }
        if let retryAt { record.retryAt = retryAt }
        if let attempts { record.attempts = attempts }
        if let bytesOnDisk { record.bytesOnDisk = bytesOnDisk }
        if let expectedBytes { record.expectedBytes = expectedBytes }
        if let validator {
            record.validator = validator?.value
            record.validatorStrength = validator?.strength.rawValue
        }
        if let checkpointBoot { record.checkpointBoot = checkpointBoot }
        if let bytesReused { record.bytesReused = bytesReused }
        if let failure = failureChange { record.failure = failure }
        if let segments = segmentsChange { record.segments = segments }
    }

    /// Folds a later patch into this one (later values win).
    mutating func merge(_ later: AssetPatch) {
        if let value = later.state { state = value }
        if let value = later.detail { detail = value }
        if let value = later.retryAt { retryAt = value }
        if let value = later.attempts { attempts = value }
        if let value = later.bytesOnDisk { bytesOnDisk = value }
        if let value = later.expectedBytes { expectedBytes = value }
        if let value = later.validator { validator = value }
        if let value = later.checkpointBoot { checkpointBoot = value }
        if let value = later.bytesReused { bytesReused = value }
        if let value = later.chunks { chunks = value }
        if let value = later.failureChange { failure = value }
        if let value = later.segmentsChange { segments = value }
    }
}

extension Row {
    /// The integer in column `index`: an integer as is, a whole real number in range, else `nil`
    /// (text, a blob, NULL, a fraction, infinity) — never a trap.
    func storedInteger(atIndex index: Int) -> Int64? {
        Self.integer(self[index])
    }

    /// The integer in the column named `column`, as ``storedInteger(atIndex:)`` reads it.
    func storedInteger(_ column: String) -> Int64? {
        Self.integer(self[column])
    }

    private static func integer(_ value: DatabaseValue) -> Int64? {
        switch value.storage {
        case .int64(let integer): return integer
        case .double(let real): return Int64(exactly: real)
        default: return nil
        }
    }
}
