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

    /// Frame kinds.
    public enum Kind {
        public static let hello = "HELLO"
        public static let addIssue = "ADDISSUE"
        public static let addAsset = "ADDASSET"
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
        /// A connection from another user, or beyond ``DaemonServer/maxConnections``; the daemon
        /// closes it at once.
        public static let permissionDenied = "permission-denied"
        /// Reloading the configuration failed (the old one stays in force).
        public static let reloadFailed = "reload-failed"

        /// Every code above and in the extensions (docs/Daemon.md lists each).
        package static let all = [
            malformedFrame, frameTooLarge, badRequest, unknownKind, notNegotiated, unsupportedVersion, notPending,
            reloadFailed, permissionDenied, feedNotFound, unknownChallenge,
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
            return CheckedFrame(kind: frame.kind, json: try JSONReader(door, limits: jsonLimits).check(frame.payload, capturing: "id"))
        } catch {
            throw WireError(ErrorCode.badRequest, error.description, id: error.captured)
        }
    }

    /// Decodes a checked payload, naming the frame in the error.
    package static func decode<Message: Decodable>(_ type: Message.Type, _ frame: CheckedFrame) throws(WireError) -> Message {
        do {
            return try frame.json.decode(type, using: decoder)
        } catch let DecodingError.keyNotFound(key, _) {
            throw WireError(ErrorCode.badRequest, "\(frame.kind): missing field '\(snake(key.stringValue))'")
        } catch let DecodingError.typeMismatch(_, context), let DecodingError.valueNotFound(_, context) {
            throw WireError(ErrorCode.badRequest, "\(frame.kind): wrong type for '\(path(context.codingPath))'")
        } catch let DecodingError.dataCorrupted(context) {
            let at = context.codingPath.isEmpty ? "" : " at '\(path(context.codingPath))'"
            throw WireError(ErrorCode.badRequest, "\(frame.kind): invalid JSON\(at): \(context.debugDescription)")
        } catch {
            throw WireError(ErrorCode.badRequest, "\(frame.kind): invalid JSON")
        }
    }

    private static func path(_ keys: [any CodingKey]) -> String {
        keys.map { $0.intValue.map { "[\($0)]" } ?? snake($0.stringValue) }.joined(separator: ".")
    }

    private static func snake(_ name: String) -> String {
        var result = ""
        for character in name {
            if character.isUppercase { result += "_" + character.lowercased() } else { result.append(character) }
        }
        return result
    }

    package static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.keyEncodingStrategy = .convertToSnakeCase
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()

    package static let decoder: JSONDecoder = {
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        decoder.dateDecodingStrategy = .iso8601
        return decoder
    }()
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
