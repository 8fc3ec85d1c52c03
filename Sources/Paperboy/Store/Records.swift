import Foundation
import GRDB

/// One row of the `issue` table.
struct IssueRecord: Codable, Sendable, FetchableRecord, PersistableRecord {
    static let databaseTableName = "issue"
    var name: String
    var date: Date
    var addedAt: Date
    var isNew: Bool
    var coverPath: String?
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
    var request: AssetRequest
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

    init(
        id: String, issueName: String, seq: Int64, request: AssetRequest, userInfo: Data?, state: String,
        detail: String?, retryAt: Date?, attempts: Int, bytesOnDisk: Int64, expectedBytes: Int64?,
        validator: String?, validatorStrength: String?
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
    }

    /// The request column holds the request as JSON text with sorted keys.
    private static let requestDecoder = JSONDecoder()
    private static let requestEncoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return encoder
    }()

    init(row: Row) throws {
        id = row["id"]
        issueName = row["issueName"]
        seq = row["seq"]
        let json: DatabaseValue = row["request"]
        let bytes: Data
        switch json.storage {
        case .string(let text): bytes = Data(text.utf8)
        case .blob(let data): bytes = data
        default:
            throw DatabaseError(resultCode: .SQLITE_MISMATCH, message: "asset \(id): the request column is not JSON text")
        }
        do {
            request = try Self.requestDecoder.decode(AssetRequest.self, from: bytes)
        } catch {
            throw DatabaseError(resultCode: .SQLITE_MISMATCH, message: "asset \(id): unreadable request: \(error)")
        }
        userInfo = row["userInfo"]
        state = row["state"]
        detail = row["detail"]
        retryAt = row["retryAt"]
        attempts = row["attempts"]
        bytesOnDisk = row["bytesOnDisk"]
        expectedBytes = row["expectedBytes"]
        validator = row["validator"]
        validatorStrength = row["validatorStrength"]
    }

    func encode(to container: inout PersistenceContainer) throws {
        container["id"] = id
        container["issueName"] = issueName
        container["seq"] = seq
        container["request"] = String(decoding: try Self.requestEncoder.encode(request), as: UTF8.self)
        container["userInfo"] = userInfo
        container["state"] = state
        container["detail"] = detail
        container["retryAt"] = retryAt
        container["attempts"] = attempts
        container["bytesOnDisk"] = bytesOnDisk
        container["expectedBytes"] = expectedBytes
        container["validator"] = validator
        container["validatorStrength"] = validatorStrength
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
    }
}
