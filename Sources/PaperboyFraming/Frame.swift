import Foundation

/// One frame of Paperboy's framed protocols: the transport protocol spoken with helper
/// executables (docs/WritingTransports.md) and the daemon's client protocol (docs/Daemon.md).
///
/// On the wire a frame is an ASCII header line `KIND LENGTH\n` (1 to 16 upper-case letters, one
/// space, the payload length in 1 to 10 decimal digits; at most 32 bytes with the newline)
/// followed by exactly `LENGTH` payload bytes.
public struct Frame: Sendable, Equatable {
    /// The frame's kind, such as `HELLO`.
    public var kind: String
    /// The payload bytes.
    public var payload: Data

    /// Creates a frame.
    public init(kind: String, payload: Data) {
        self.kind = kind
        self.payload = payload
    }

    /// The longest header line, newline included.
    public static let maxHeaderLength = 32

    /// Encodes one frame: its header line, then `payload`.
    public static func encode(_ kind: String, _ payload: Data = Data()) -> Data {
        var frame = Data("\(kind) \(payload.count)\n".utf8)
        frame.append(payload)
        return frame
    }

    /// Parses a header line (without its newline) into a kind and a length; `nil` when it is not
    /// `KIND LENGTH` as described on ``Frame``.
    public static func parseHeader(_ line: some Collection<UInt8>) -> (kind: String, length: Int)? {
        guard let space = line.firstIndex(of: UInt8(ascii: " ")) else { return nil }
        let kind = line[line.startIndex..<space]
        let digits = line[line.index(after: space)...]
        guard (1...16).contains(kind.count), kind.allSatisfy({ (65...90).contains($0) }),
              (1...10).contains(digits.count), digits.allSatisfy({ (48...57).contains($0) }),
              let length = Int(String(decoding: digits, as: UTF8.self)) else { return nil }
        return (String(decoding: kind, as: UTF8.self), length)
    }

    /// Up to 48 bytes, printable ASCII kept and the rest escaped, for error messages.
    public static func quote(_ bytes: some Collection<UInt8>) -> String {
        var text = ""
        for byte in bytes.prefix(48) {
            switch byte {
            case 0x20...0x7E where byte != UInt8(ascii: "\\"): text.append(Character(UnicodeScalar(byte)))
            case UInt8(ascii: "\n"): text += "\\n"
            default: text += String(format: "\\x%02x", byte)
            }
        }
        return "\"\(text)\(bytes.count > 48 ? "…" : "")\""
    }
}

/// Why reading or writing frames failed.
public enum FrameIOError: Error, Sendable {
    /// The peer closed its end.
    case closed
    /// Nothing arrived within the allowed time.
    case timedOut(Duration)
    /// The reader or writer was told to give up (a cancelled transfer, a stopping server).
    case abandoned
    /// A header line that is not `KIND LENGTH` (quoted).
    case garbage(String)
    /// A frame longer than allowed for its kind.
    case tooLarge(kind: String, length: Int)
    /// A system call failed.
    case system(String)
}
