import Foundation
import Paperboy
import PaperboyFraming

/// What a helper's frames mean during one transfer, checked one frame at a time.
///
/// Everything a helper sends is untrusted: every number is range-checked here before it reaches
/// the core (offsets and lengths are ``ByteCount``s, positions added without overflow,
/// `retry_after` made safe by ``RequestedDelay/seconds(_:)``, failure
/// counts made non-negative). A frame that breaks a rule throws a ``Conversation/Failure``
/// naming the frame; nothing a helper sends can trap.
struct TransferFrames {
    /// What the conversation does next.
    enum Step {
        /// Ask the sink, send the answer.
        case challenge(AuthChallenge)
        /// Tell the sink what the source promised.
        case begin(TransferResponse)
        /// Write these bytes into the sink.
        case data(Data)
        /// The transfer is complete.
        case done
    }

    let id: Int
    let url: URL
    /// The helper's name, for the messages of its own `ERROR` frames.
    let helperName: String
    private(set) var began = false
    /// Bytes of the resource received so far, `BEGIN`'s offset included.
    private(set) var position: Int64 = 0
    /// Where the bytes stop: `BEGIN`'s `end` when it answered a range, else its length.
    private(set) var expected: Int64?
    /// Whether the `FETCH` asked for one range (`end`): only then may `BEGIN` carry an `end`.
    let asksForRange: Bool

    init(id: Int, url: URL, helperName: String, asksForRange: Bool = false) {
        self.id = id
        self.url = url
        self.helperName = helperName
        self.asksForRange = asksForRange
    }

    mutating func accept(_ frame: Frame) throws(Conversation.Failure) -> Step {
        switch frame.kind {
        case ExecProtocol.Kind.challenge:
            let message = try Conversation.decode(ChallengeMessage.self, frame, url: url)
            try check(message.id)
            return .challenge(AuthChallenge(
                kind: AuthChallenge.Kind(message.kind), url: url, realm: message.realm,
                previousFailureCount: max(0, message.previousFailures ?? 0),
                serverTrust: message.serverTrust.map {
                    ServerTrust(host: $0.host, keyType: $0.keyType, fingerprint: $0.fingerprint,
                                reason: ServerTrust.Reason(rawValue: $0.reason) ?? .unknownHost)
                },
                prompts: message.prompts ?? []))

        case ExecProtocol.Kind.begin:
            guard !began else { throw Conversation.Failure(.protocolError, "sent BEGIN twice", url: url) }
            let message = try Conversation.decode(BeginMessage.self, frame, url: url)
            try check(message.id)
            let offset: ByteCount
            let length: ByteCount?
            let end: ByteCount?
            do throws(BoundaryError) {
                offset = try ByteCount(message.offset, door: "BEGIN offset")
                length = try message.length.map { length throws(BoundaryError) in try ByteCount(length, door: "BEGIN length") }
                end = try message.end.map { end throws(BoundaryError) in try ByteCount(end, door: "BEGIN end") }
            } catch {
                throw Conversation.Failure(.protocolError, "sent a bad \(error)", url: url, retryable: false)
            }
            if let length, offset > length {
                throw Conversation.Failure(
                    .protocolError, "sent BEGIN with offset \(offset.bytes) past its length \(length.bytes)", url: url, retryable: false)
            }
            if let end {
                guard asksForRange else {
                    throw Conversation.Failure(.protocolError, "sent BEGIN with an end to a FETCH without one", url: url, retryable: false)
                }
                guard let length, offset <= end, end <= length else {
                    throw Conversation.Failure(
                        .protocolError, "sent BEGIN with end \(end.bytes) outside offset \(offset.bytes) to length \(length.map { String($0.bytes) } ?? "none")",
                        url: url, retryable: false)
                }
            }
            began = true
            position = offset.bytes
            expected = end?.bytes ?? length?.bytes
            return .begin(TransferResponse(offset: offset.bytes, end: end?.bytes, expectedLength: length?.bytes,
                                           validator: message.validator?.validator))

        case ExecProtocol.Kind.data:
            guard began else { throw Conversation.Failure(.protocolError, "sent DATA before BEGIN", url: url) }
            // Both terms are bounded (the position by BEGIN's check, a payload by the frame
            // reader), so the sum cannot overflow; the limit still applies without a length.
            let after = position + Int64(frame.payload.count)
            if let expected, after > expected {
                throw Conversation.Failure(.protocolError, "sent more than the \(expected) bytes it announced (\(after) so far)", url: url)
            }
            guard after <= ByteCount.max else {
                throw Conversation.Failure(.protocolError, "sent more than \(ByteCount.max) bytes (2^62)", url: url)
            }
            position = after
            return .data(frame.payload)

        case ExecProtocol.Kind.done:
            guard began else { throw Conversation.Failure(.protocolError, "sent DONE before BEGIN", url: url) }
            let message = try Conversation.decode(DoneMessage.self, frame, url: url)
            try check(message.id)
            if let expected, position < expected {
                var failure = Conversation.Failure(
                    .connectionLost, "ended the transfer after \(position) of the \(expected) bytes it announced", url: url)
                failure.reusable = true
                throw failure
            }
            return .done

        case ExecProtocol.Kind.error:
            let message = try Conversation.decode(ErrorMessage.self, frame, url: url)
            try check(message.id)
            let code = TransportError.Code(TerminalText.escape(message.code))
            throw Conversation.Failure(remote: TransportError(
                code, "\(helperName): \(TerminalText.escape(message.message))", url: url,
                isRetryable: message.retryable ?? code.isRetryableByDefault,
                retryAfter: message.retryAfter.flatMap(RequestedDelay.seconds)))

        default:
            throw Conversation.Failure(.protocolError, "sent an unexpected \(frame.kind) message", url: url)
        }
    }

    private func check(_ received: Int?) throws(Conversation.Failure) {
        if let received, received != id {
            throw Conversation.Failure(.protocolError, "answered request \(received) while request \(id) was running", url: url)
        }
    }
}
