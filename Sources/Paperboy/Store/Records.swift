import Foundation
import GRDB
import Synchronization

/// One row of the `issue` table.
struct IssueRecord: Sendable, FetchableRecord, PersistableRecord {
    static let databaseTableName = "issue"
    var name: String
    var date: Date
    var addedAt: Date
    var isNew: Bool
    var coverPath: String?
}

// In an extension, so that the memberwise initializer stays.
extension IssueRecord {
    // Coded by hand, dates through ``StoredDate`` (GRDB's `Codable` path formats them with ICU).
    init(row: Row) throws {
        // Decoded with errors, not GRDB's trapping subscripts: an unreadable name or date fails
        // the read, and a damaged flag or cover path reads as none.
        name = try row.decode(String.self, forColumn: "name")
        date = try row.decode(StoredDate.self, forColumn: "date").date
        addedAt = try row.decode(StoredDate.self, forColumn: "addedAt").date
        isNew = row.storedInteger("isNew").map { $0 != 0 } ?? false
        coverPath = try? row.decode(String?.self, forColumn: "coverPath")
    }

    func encode(to container: inout PersistenceContainer) throws {
        container["name"] = name
        container["date"] = StoredDate(date)
        container["addedAt"] = StoredDate(addedAt)
        container["isNew"] = isNew
        container["coverPath"] = coverPath
    }
}

/// An asset's request as stored (JSON text), decoded the first time it is read: listings of
/// big issues read thousands of rows, and decoding every request cost more than the rest of
/// the row together.
final class StoredRequest: Sendable, Hashable {
    private enum Form {
        case json(Data)
        case decoded(AssetRequest)
        case unreadable(String)
    }

    private let form: Mutex<Form>

    init(json: Data) { form = Mutex(.json(json)) }
    init(_ request: AssetRequest) { form = Mutex(.decoded(request)) }

    /// The shared coders: the request column holds JSON with sorted keys.
    private static let decoder = JSONDecoder()
    private static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return encoder
    }()

    /// The request; an unreadable one (a damaged database) reads as a request for
    /// ``unreadableURL``, and ``failure`` says why.
    var value: AssetRequest {
        form.withLock { form in
            switch form {
            case .decoded(let request):
                return request
            case .unreadable:
                return AssetRequest(url: Self.unreadableURL)
            case .json(let data):
                if let request = RequestJSON.request(from: data) {
                    form = .decoded(request)
                    return request
                }
                do {
                    let request = try Self.decoder.decode(AssetRequest.self, from: data)
                    form = .decoded(request)
                    return request
                } catch {
                    form = .unreadable("\(error)")
                    return AssetRequest(url: Self.unreadableURL)
                }
            }
        }
    }

    /// Why the stored request cannot be read, if it cannot.
    var failure: String? {
        _ = value
        return form.withLock { form in
            if case .unreadable(let reason) = form { return reason }
            return nil
        }
    }

    static let unreadableURL = URL(string: "unreadable:request")!

    /// The JSON text for the request column.
    func json() throws -> String {
        let stored: Data? = form.withLock { form in
            if case .json(let data) = form { return data }
            return nil
        }
        if let stored { return String(decoding: stored, as: UTF8.self) }
        let request = value
        return try RequestJSON.text(request) ?? String(decoding: Self.encoder.encode(request), as: UTF8.self)
    }

    static func == (lhs: StoredRequest, rhs: StoredRequest) -> Bool { lhs === rhs || lhs.value == rhs.value }
    func hash(into hasher: inout Hasher) { hasher.combine(value) }
}

/// One row of the `asset` table.
///
/// Rows are read and written column by column rather than through `Codable`: a sync reads
/// every asset of an issue several times, and GRDB's generic row decoder (with a new JSON
/// decoder per row for the request) cost about 25 µs a row.
struct AssetRecord: Sendable, FetchableRecord, PersistableRecord {
    static let databaseTableName = "asset"
    var id: String
    var issueName: String
    var seq: Int64
    var storedRequest: StoredRequest
    var request: AssetRequest {
        get { storedRequest.value }
        set { storedRequest = StoredRequest(newValue) }
    }
    /// The app's userInfo, as JSON bytes.
    var userInfo: Data?
    /// One of ``PersistedState``'s raw values.
    var state: String
    /// The failure message, when failed.
    var detail: String?
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

    init(
        id: String, issueName: String, seq: Int64, request: AssetRequest, userInfo: Data?, state: String,
        detail: String?, retryAt: Date?, attempts: Int, bytesOnDisk: Int64, expectedBytes: Int64?,
        validator: String?, validatorStrength: String?, checkpointBoot: String? = nil
    ) {
        self.id = id
        self.issueName = issueName
        self.seq = seq
        storedRequest = StoredRequest(request)
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

    /// Reads the columns by position: rows come from the query interface, which selects
    /// ``databaseSelection`` (every column, in the order of ``columnNames``). Looking each
    /// column up by name cost more than reading it.
    init(row: Row) throws {
        // Text through GRDB's throwing decoding, numbers leniently and range-checked: a damaged
        // or hostile row must not trap (GRDB's subscripts do on a value of another type).
        id = try row.decode(String.self, atIndex: 0)
        issueName = try row.decode(String.self, atIndex: 1)
        seq = row.storedInteger(atIndex: 2) ?? 0
        let json: DatabaseValue = row[3]
        switch json.storage {
        case .string(let text): storedRequest = StoredRequest(json: Data(text.utf8))
        case .blob(let data): storedRequest = StoredRequest(json: data)
        default: storedRequest = StoredRequest(json: Data())
        }
        userInfo = try row.decode(Data?.self, atIndex: 4)
        state = try row.decode(String.self, atIndex: 5)
        detail = try? row.decode(String?.self, atIndex: 6)
        // An unreadable or absurd retry date means "retry now".
        retryAt = (try? row.decode(StoredDate?.self, atIndex: 7))??.date
        attempts = Int(min(max(0, row.storedInteger(atIndex: 8) ?? 0), Self.maxStoredAttempts))
        bytesOnDisk = max(0, row.storedInteger(atIndex: 9) ?? 0)
        expectedBytes = row.storedInteger(atIndex: 10).flatMap { $0 >= 0 ? $0 : nil }
        validator = try? row.decode(String?.self, atIndex: 11)
        validatorStrength = try? row.decode(String?.self, atIndex: 12)
        checkpointBoot = try? row.decode(String?.self, atIndex: 13)
    }

    static var databaseSelection: [any SQLSelectable] { columnNames.map { Column($0) } }

    /// The most attempts a row is read with (a damaged row could hold `Int64.max`, and the
    /// count is incremented).
    static let maxStoredAttempts: Int64 = 1 << 20

    /// The table's columns, in the order of ``columnValues()``.
    static let columnNames = [
        "id", "issueName", "seq", "request", "userInfo", "state", "detail", "retryAt", "attempts",
        "bytesOnDisk", "expectedBytes", "validator", "validatorStrength", "checkpointBoot",
    ]

    /// The row's values, in the order of ``columnNames``.
    func columnValues() throws -> [(any DatabaseValueConvertible)?] {
        [id, issueName, seq, try storedRequest.json(), userInfo, state, detail, retryAt.map(StoredDate.init), attempts,
         bytesOnDisk, expectedBytes, validator, validatorStrength, checkpointBoot]
    }

    func encode(to container: inout PersistenceContainer) throws {
        for (name, value) in zip(Self.columnNames, try columnValues()) { container[name] = value }
    }

    var resourceValidator: ResourceValidator? {
        guard let validator else { return nil }
        return ResourceValidator(validator, strength: ResourceValidator.Strength(rawValue: validatorStrength ?? "") ?? .weak)
    }
}

/// The states as stored in the database.
enum PersistedState: String, Sendable {
    case idle, queued, paused, retry, network, downloading, finished, delivered, failed, cancelled
}

/// A partial update of one asset row; `nil` fields are left alone.
struct AssetPatch: Sendable {
    var id: String
    var state: PersistedState?
    var detail: String??
    var retryAt: Date??
    var attempts: Int?
    var bytesOnDisk: Int64?
    var expectedBytes: Int64??
    var validator: ResourceValidator??
    var checkpointBoot: String??

    init(id: String) { self.id = id }

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
