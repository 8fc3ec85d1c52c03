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
struct AssetRecord: Codable, Sendable, FetchableRecord, PersistableRecord {
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

    static let databaseColumnEncodingStrategy = DatabaseColumnEncodingStrategy.useDefaultKeys
    static func databaseJSONEncoder(for column: String) -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return encoder
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
