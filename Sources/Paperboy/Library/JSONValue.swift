import Foundation

/// A JSON value: what an asset's `userInfo` may hold.
public enum JSONValue: Sendable, Hashable, Codable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() { self = .null }
        else if let value = try? container.decode(Bool.self) { self = .bool(value) }
        else if let value = try? container.decode(Double.self) { self = .number(value) }
        else if let value = try? container.decode(String.self) { self = .string(value) }
        else if let value = try? container.decode([JSONValue].self) { self = .array(value) }
        else { self = .object(try container.decode([String: JSONValue].self)) }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .number(let value): try container.encode(value)
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }
}

extension JSONValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral,
    ExpressibleByBooleanLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral, ExpressibleByNilLiteral {
    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int) { self = .number(Double(value)) }
    public init(floatLiteral value: Double) { self = .number(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self = .object(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
    public init(nilLiteral: ()) { self = .null }
}

extension JSONValue {
    /// The value as JSON bytes, checked at `door` like JSON read from outside: an app's value is
    /// stored or sent only within the limits the daemon and a later read apply to it.
    ///
    /// - Throws: ``JSONInputError`` naming the door and the limit (a NaN or an infinity too).
    package func checkedJSON(at door: JSONReader) throws(JSONInputError) -> Data {
        let data: Data
        do {
            data = try JSONCoding.plain.encoder.encode(self)
        } catch {
            throw JSONInputError(door: door.door, kind: .number, problem: "a number JSON cannot hold (NaN or infinite)", offset: nil)
        }
        return try door.check(data).data
    }
}

extension JSONValue {
    /// The value as the `userInfo` of the asset at `url`, in-process and before a client sends it
    /// to a daemon alike.
    ///
    /// - Throws: ``LibraryError`` `.userInfoTooLarge` naming the limit (depth, size or count).
    package func userInfoJSON(for url: URL, maxBytes: Int) throws(LibraryError) -> Data {
        do {
            return try checkedJSON(at: .userInfo(of: url, maxBytes: maxBytes))
        } catch {
            throw LibraryError(.userInfoTooLarge, error.description)
        }
    }
}

extension JSONReader {
    /// The door of a push payload (``Library/contentAvailable(payload:throttle:dontThrottle:now:)``,
    /// `paperboy notify`, `NOTIFY`).
    package static let pushPayload = JSONReader("push payload", limits: .appValue)

    /// The door of an asset's `userInfo`, at most `maxBytes` as JSON.
    package static func userInfo(of url: URL, maxBytes: Int) -> JSONReader {
        JSONReader("userInfo of asset \(url.redactedString)", limits: .appValue.with(maxBytes: maxBytes))
    }
}
