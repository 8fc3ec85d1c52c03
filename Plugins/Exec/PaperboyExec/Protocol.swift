import Foundation
import Paperboy
import PaperboyFraming

/// The Paperboy transport protocol spoken with helper executables (see docs/WritingTransports.md).
///
/// Every message is a frame: an ASCII header line `KIND LENGTH\n` (an upper-case word, one
/// space, the payload length in decimal) followed by exactly `LENGTH` payload bytes. `DATA`
/// payloads are raw bytes; every other payload is one UTF-8 JSON object.
public enum ExecProtocol {
    /// The protocol versions this Paperboy speaks, offered in the core's `HELLO`.
    public static let versions = [1]
    /// The capability a helper lists in its `HELLO` to be asked for one range (`FETCH`'s `end`).
    static let rangesCapability = "ranges"
    /// The largest `DATA` payload accepted.
    public static let maxDataLength = 1 << 20
    /// The largest payload of any other frame.
    public static let maxControlLength = 64 * 1024
    /// The largest offset or length a helper may announce in `BEGIN`: ``ByteCount/max`` (2^62
    /// bytes), the one limit of byte counts from outside.
    public static let maxResourceLength: Int64 = ByteCount.max

    /// The limits of a helper's JSON payload, checked by the reader before it is decoded:
    /// ``maxControlLength`` bytes, 64 levels as the daemon's messages, and the short lists and
    /// strings of this protocol's messages (prompts, schemes, an error's message).
    static let jsonLimits = JSONReader.Limits(maxDepth: 64, maxBytes: maxControlLength, maxElements: 1_024, maxMembers: 1_024,
                                              maxStringBytes: 16 * 1024)

    /// The largest payload accepted for a frame of `kind`.
    static func maxLength(of kind: String) -> Int {
        kind == Kind.data ? maxDataLength : maxControlLength
    }

    /// Frame kinds.
    public enum Kind {
        public static let hello = "HELLO"
        public static let fetch = "FETCH"
        public static let challenge = "CHALLENGE"
        public static let answer = "ANSWER"
        public static let begin = "BEGIN"
        public static let data = "DATA"
        public static let done = "DONE"
        public static let error = "ERROR"
    }

    /// Encodes one frame.
    public static func frame(_ kind: String, _ payload: Data = Data()) -> Data {
        Frame.encode(kind, payload)
    }

    /// Encodes one frame with a JSON payload.
    static func frame<Message: Encodable>(_ kind: String, json message: Message) throws -> Data {
        frame(kind, try encoder.encode(message))
    }

    /// The protocol's coders (``JSONCoding/helperWire``).
    static let encoder = JSONCoding.helperWire.encoder
    static let decoder = JSONCoding.helperWire.decoder
}

// MARK: Messages (field names are snake_case on the wire)

/// Core → helper, first message.
struct CoreHello: Codable {
    var protocols: [Int]
    var paperboy: String
}

/// Helper → core, answer to ``CoreHello``.
struct HelperHello: Codable {
    var `protocol`: Int
    var name: String?
    var version: String?
    var schemes: [String]?
    var capabilities: [String]?
}

/// A validator as it travels on the wire.
struct WireValidator: Codable {
    var value: String
    var strength: String

    init(_ validator: ResourceValidator) {
        value = validator.value
        strength = validator.strength.rawValue
    }

    var validator: ResourceValidator {
        ResourceValidator(value, strength: ResourceValidator.Strength(rawValue: strength) ?? .weak)
    }
}

/// Core → helper: fetch a resource.
struct FetchRequest: Codable {
    var id: Int
    var url: String
    var offset: Int64
    var validator: WireValidator?
    var headers: [String: String]
    var options: [String: String]
    var connectTimeout: Double
    var idleTimeout: Double
    var asset: String
    /// The end (exclusive) of the one range to fetch (``TransferJob/rangeEnd``); only sent to a
    /// helper whose `HELLO` lists `ranges`.
    var end: Int64?
}

/// Helper → core: what the source promised.
struct BeginMessage: Codable {
    var id: Int?
    var offset: Int64
    var length: Int64?
    var validator: WireValidator?
    /// The end (exclusive) of the bytes sent, when the helper answers a `FETCH` with `end` by
    /// that range.
    var end: Int64?
}

/// Helper → core: credentials or a trust decision are needed.
struct ChallengeMessage: Codable {
    struct Trust: Codable {
        var host: String
        var keyType: String
        var fingerprint: String
        var reason: String
    }

    var id: Int?
    var kind: String
    var realm: String?
    var previousFailures: Int?
    var prompts: [String]?
    var serverTrust: Trust?
}

/// Core → helper: the answer to a challenge.
struct AnswerMessage: Codable {
    struct WireCredential: Codable {
        var user: String?
        var password: String?
        var token: String?
        var privateKey: String?
        var passphrase: String?
        var trustsServer: Bool
        var responses: [String]
    }

    var id: Int
    var disposition: String
    var credential: WireCredential?

    init(id: Int, _ disposition: AuthChallengeDisposition) {
        self.id = id
        switch disposition {
        case .useCredential(let credential):
            self.disposition = "use-credential"
            self.credential = WireCredential(
                user: credential.user, password: credential.password, token: credential.token,
                privateKey: credential.privateKey?.path, passphrase: credential.passphrase,
                trustsServer: credential.trustsServer, responses: credential.responses)
        case .performDefaultHandling:
            self.disposition = "default"
        case .cancelAuthenticationChallenge:
            self.disposition = "cancel"
        case .rejectProtectionSpace:
            self.disposition = "reject"
        }
    }
}

/// Helper → core: the transfer ended.
struct DoneMessage: Codable {
    var id: Int?
}

/// Helper → core: the transfer failed.
struct ErrorMessage: Codable {
    var id: Int?
    var code: String
    var message: String
    var retryable: Bool?
    var retryAfter: Double?
}
