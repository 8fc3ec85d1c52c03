import Foundation
import Paperboy
import PaperboyFraming

/// The protocol spoken between `paperboy daemon` and its clients (see docs/Daemon.md).
///
/// Frames are those of the transport protocol (``Frame``: `KIND LENGTH\n` then the payload);
/// every payload is one UTF-8 JSON object with `snake_case` field names, at most
/// ``maxPayloadLength`` bytes.
public enum DaemonProtocol {
    /// The protocol versions this Paperboy speaks.
    public static let versions = [1]
    /// The largest payload of any frame, either way.
    public static let maxPayloadLength = 256 * 1024
    /// The largest request or asset identifier a client may send.
    public static let maxIdentifier = Int64(1) << 53
    /// The most assets one `ADDASSETS` adds: its answer, an identifier of 36 characters per
    /// asset, then always fits a frame, whatever the request's items weigh.
    public static let maxAssetsPerRequest = 4_096

    /// Frame kinds.
    public enum Kind {
        public static let hello = "HELLO"
        public static let addIssue = "ADDISSUE"
        public static let addAsset = "ADDASSET"
        /// Assets added to one issue in one transaction, as `Issue.addAssets(_:downloading:)`.
        public static let addAssets = "ADDASSETS"
        public static let download = "DOWNLOAD"
        public static let pause = "PAUSE"
        public static let resume = "RESUME"
        public static let cancel = "CANCEL"
        public static let status = "STATUS"
        public static let subscribe = "SUBSCRIBE"
        public static let ack = "ACK"
        public static let reload = "RELOAD"
        public static let ok = "OK"
        public static let error = "ERROR"
        public static let event = "EVENT"
    }

    /// Codes of `ERROR` frames about the protocol itself; errors of the library carry
    /// ``LibraryError/Code`` values (`duplicate-issue`, `asset-not-found`…).
    public enum ErrorCode {
        /// A header line that is not `KIND LENGTH`; the daemon closes the connection after it.
        public static let malformedFrame = "malformed-frame"
        /// A payload longer than ``maxPayloadLength``; the daemon closes the connection after it.
        public static let frameTooLarge = "frame-too-large"
        /// A payload that is not the JSON object the kind needs, or a value out of range.
        public static let badRequest = "bad-request"
        /// A kind the daemon does not know.
        public static let unknownKind = "unknown-kind"
        /// A request before the `HELLO` exchange.
        public static let notNegotiated = "not-negotiated"
        /// None of the client's versions is spoken; the daemon closes the connection after it.
        public static let unsupportedVersion = "unsupported-version"
        /// `ACK` for an asset that is not waiting for an acknowledgement.
        public static let notPending = "not-pending"
        /// A connection from another user, or beyond the daemon's limit (64); the daemon
        /// closes it at once.
        public static let permissionDenied = "permission-denied"
        /// Reloading the configuration failed (the old one stays in force).
        public static let reloadFailed = "reload-failed"

        /// Every code above and in the extensions (docs/Daemon.md lists each).
        package static let all = [
            malformedFrame, frameTooLarge, badRequest, unknownKind, notNegotiated, unsupportedVersion, notPending,
            reloadFailed, permissionDenied, feedNotFound, unknownChallenge, unknownResumption,
        ]
    }

    /// Encodes a frame with a JSON payload.
    package static func frame<Message: Encodable>(_ kind: String, _ message: Message) -> Data {
        // The messages are plain structs of strings and numbers: encoding them cannot fail.
        Frame.encode(kind, (try? encoder.encode(message)) ?? Data("{}".utf8))
    }

    /// The limits of every payload, either way (``JSONReader/Limits/message``, at most
    /// ``maxPayloadLength`` bytes); threads that read frames have a stack for them
    /// (``JSONReader/Limits/threadStackSize``).
    package static let jsonLimits = JSONReader.Limits.message.with(maxBytes: maxPayloadLength)

    /// Checks a request's payload at its door (`daemon request ADDASSET`), before anything decodes it.
    ///
    /// - Throws: ``WireError`` `bad-request` naming the door and the limit, with the request's
    ///   `id` when it came before the problem.
    package static func request(_ frame: Frame) throws(WireError) -> CheckedFrame {
        try check(frame, door: "daemon request \(frame.kind)")
    }

    /// Checks a frame from the daemon at the client's door (`daemon reply OK`, `daemon reply EVENT`).
    package static func reply(_ frame: Frame) throws(WireError) -> CheckedFrame {
        try check(frame, door: "daemon reply \(frame.kind)")
    }

    private static func check(_ frame: Frame, door: String) throws(WireError) -> CheckedFrame {
        do {
            let json = try JSONReader(door, limits: jsonLimits).check(frame.payload, capturing: "id", recordingNonIntegers: true)
            return CheckedFrame(kind: frame.kind, json: json)
        } catch {
            throw WireError(ErrorCode.badRequest, error.description, id: error.captured)
        }
    }

    /// A request's `id` when it is an integer, even one out of range, so that the refusal of the
    /// request carries it; `nil` when it is absent or not an integer (the error then has no `id`).
    package static func readableID(_ frame: CheckedFrame) -> Int64? {
        frame.json.captured.flatMap { Int64($0) }
    }

    /// Refuses a request whose `id` is there but not an integer from 0 to ``maxIdentifier``
    /// (`1.5`, `-1`, `"7"`, `null`): `bad-request` `STATUS id: expected an integer from 0 to 2^53, got 1.5`,
    /// with the `id` only when it is an integer. An absent `id` is left to the kind's decoding.
    package static func checkID(_ frame: CheckedFrame) throws(WireError) {
        guard let text = frame.json.captured else { return }
        if let id = Int64(text), (0...maxIdentifier).contains(id) { return }
        throw WireError(ErrorCode.badRequest, "\(frame.kind) id: expected an integer from 0 to 2^53, got \(JSONValue.shown(text))",
                        id: readableID(frame))
    }

    /// Decodes a checked payload: the one place a decoding failure becomes a `bad-request`
    /// message, naming the frame, the field's path and the value (``refusal(_:of:)``).
    ///
    /// One rule for integers, either way and in every field (`id` included): a JSON number
    /// without a fraction or an exponent that an `Int64` holds. `1.5`, `1.0` and `1e3` where an
    /// integer belongs get `ADDASSET request.priority: expected an integer, got 1.0`; in a
    /// `number` field or an app's own JSON they are numbers.
    package static func decode<Message: Decodable>(_ type: Message.Type, _ frame: CheckedFrame) throws(WireError) -> Message {
        try checkIntegers(type, frame)
        do {
            return try frame.json.decode(type, using: decoder)
        } catch let error as DecodingError {
            throw WireError(ErrorCode.badRequest, refusal(error, of: frame))
        } catch {
            throw WireError(ErrorCode.badRequest, "\(frame.kind): \(error)")
        }
    }

    /// `ADDASSET download: expected a boolean, got "yes"`, `ADDISSUE: missing field 'name'`,
    /// `ADDISSUE date: expected an ISO 8601 date-time …, got "2026-11-21"`.
    private static func refusal(_ error: DecodingError, of frame: CheckedFrame) -> String {
        switch error {
        case .keyNotFound(let key, let context):
            return "\(frame.kind): missing field '\(Located(context.codingPath + [key], in: frame).path)'"
        case .typeMismatch(let type, let context), .valueNotFound(let type, let context):
            let located = Located(context.codingPath, in: frame)
            return "\(frame.kind) \(located.path): expected \(describe(type)), got \(located.shownValue)"
        case .dataCorrupted(let context) where !context.codingPath.isEmpty:
            return "\(frame.kind) \(Located(context.codingPath, in: frame).path): \(context.debugDescription)"
        case .dataCorrupted:
            // The reader checked the JSON and ``checkIntegers(_:_:)`` every number that is not an
            // integer: Foundation's "not valid JSON" without a path is a number no smaller integer
            // type holds (`300` for an `Int8`), which no field of the protocol has.
            return "\(frame.kind): expected an integer, got a number no integer holds"
        @unknown default:
            return "\(frame.kind): \(error)"
        }
    }

    private static func describe(_ type: Any.Type) -> String {
        switch type {
        case is Bool.Type: "a boolean"
        case is String.Type: "a string"
        case is any BinaryInteger.Type: "an integer"
        case is any BinaryFloatingPoint.Type: "a number"
        case is Date.Type: "a date-time string"
        case is [Any].Type: "an array"
        case is [String: Any].Type: "an object"
        default: "a value of type \(type)"
        }
    }

    /// Members whose values are never shown in a message, nor those of anything inside them: a
    /// request's `headers` (a token) and an answer's `credential` (a password).
    private static let secretMembers: Set<String> = ["headers", "credential"]

    /// A coding path found in the frame's JSON: the path as the client wrote it (`request.headers.Authorization`,
    /// `request.max_bytes_per_second`), the value there (`nil` when the JSON has none), and
    /// whether it lies inside a secret member.
    private struct Located {
        var path: String
        var value: JSONValue?
        var isSecret = false

        init(_ keys: [any CodingKey], in frame: CheckedFrame) {
            self.init(keys, in: (try? frame.json.decode(JSONValue.self)) ?? .null)
        }

        init(_ keys: [any CodingKey], in root: JSONValue) {
            var node: JSONValue? = root
            var components: [String] = []
            for key in keys {
                if let index = key.intValue {
                    components.append("[\(index)]")
                    if case .array(let array)? = node, array.indices.contains(index) { node = array[index] } else { node = nil }
                    continue
                }
                // A property is written in snake case; a dictionary's key (a header's name) as it is.
                let name: String
                if case .object(let object)? = node, object[key.stringValue] != nil { name = key.stringValue } else { name = snake(key.stringValue) }
                components.append(name)
                if case .object(let object)? = node { node = object[name] } else { node = nil }
                if DaemonProtocol.secretMembers.contains(name) { isSecret = true }
            }
            path = components.joined(separator: ".").replacingOccurrences(of: ".[", with: "[")
            value = node
        }

        /// The value as a message shows it; never a secret's.
        var shownValue: String {
            if isSecret { return "a value (not shown: it may hold a secret)" }
            return value.map(\.shown) ?? "nothing"
        }
    }

    /// Refuses a number that is not an integer (``CheckedJSON/nonIntegers``) where `Message` has
    /// an integer: decodes once more with each such number written as a string that names it
    /// (`"#2"`), so that the decoder's type mismatch says which field wants an integer. A number
    /// in a floating-point field is put back and the decoding tried again (at most 16 times); a
    /// mismatch of another type is left to the decoding proper, which names it.
    private static func checkIntegers<Message: Decodable>(_ type: Message.Type, _ frame: CheckedFrame) throws(WireError) {
        let literals = frame.json.nonIntegers
        guard !literals.isEmpty else { return }
        let original = [UInt8](frame.json.data)
        var quoted = Set(literals.indices)
        for _ in 0...16 {
            var data = Data(capacity: original.count + 8 * quoted.count)
            var last = 0
            for index in quoted.sorted() {
                data.append(contentsOf: original[last..<literals[index].lowerBound])
                data.append(contentsOf: Array("\"#\(index)\"".utf8))
                last = literals[index].upperBound
            }
            data.append(contentsOf: original[last...])
            // Through the reader again, as all JSON is read (the strings are no deeper than the numbers).
            guard let marked = try? JSONReader(frame.json.door, limits: jsonLimits.with(maxBytes: max(data.count, maxPayloadLength))).check(data) else { return }
            let expected: Any.Type
            let path: [any CodingKey]
            do {
                _ = try marked.decode(type, using: decoder)
                return
            } catch DecodingError.typeMismatch(let type, let context) {
                (expected, path) = (type, context.codingPath)
            } catch {
                return
            }
            let root = (try? marked.decode(JSONValue.self, using: decoder)) ?? .null
            let located = Located(path, in: root)
            guard case .string(let marker)? = located.value, marker.hasPrefix("#"), let index = Int(marker.dropFirst()),
                  quoted.contains(index) else { return }
            if expected is any BinaryInteger.Type {
                let text = String(decoding: original[literals[index]], as: UTF8.self)
                let value = located.isSecret ? "a value (not shown: it may hold a secret)" : JSONValue.shown(text)
                throw WireError(ErrorCode.badRequest, "\(frame.kind) \(located.path): expected an integer, got \(value)")
            }
            guard expected is any BinaryFloatingPoint.Type else { return }
            quoted.remove(index)
        }
    }

    private static func snake(_ name: String) -> String {
        var result = ""
        for character in name {
            if character.isUppercase { result += "_" + character.lowercased() } else { result.append(character) }
        }
        return result
    }

    /// The protocol's coders (``JSONCoding/daemonWire``).
    package static let encoder = JSONCoding.daemonWire.encoder
    package static let decoder = JSONCoding.daemonWire.decoder
}

/// A frame whose payload passed ``DaemonProtocol/request(_:)`` or ``DaemonProtocol/reply(_:)``:
/// the only kind ``DaemonProtocol/decode(_:_:)`` reads.
package struct CheckedFrame: Sendable {
    package var kind: String
    package var json: CheckedJSON
}

/// An error as it travels in an `ERROR` frame, and a failure in `failed` events and states.
package struct WireError: Error, Codable, Sendable, Equatable {
    package var id: Int64?
    package var code: String
    package var message: String
    /// For library errors: ``LibraryError/reason``.
    package var reason: String?
    /// For library errors of a failed transport: ``LibraryError/transportCode``.
    package var transportCode: String?
    package var retryable: Bool?

    package init(_ code: String, _ message: String, id: Int64? = nil) {
        self.code = code
        self.message = message
        self.id = id
    }

    package init(_ error: LibraryError, id: Int64? = nil) {
        code = error.code.rawValue
        message = error.message
        reason = error.reason.rawValue
        transportCode = error.transportCode?.rawValue
        retryable = error.isRetryable
        self.id = id
    }

    /// The library error this describes: the one the daemon had, code, reason, transport code,
    /// message and retryable alike (a reason a daemon did not send is decided from the codes).
    package var libraryError: LibraryError {
        let code = LibraryError.Code(code)
        let transport = transportCode.map(TransportError.Code.init)
        return LibraryError(code, message, isRetryable: retryable ?? false,
                            reason: reason.map(LibraryError.Reason.init) ?? LibraryError.Reason(code: code, transportCode: transport),
                            transportCode: transport)
    }
}
