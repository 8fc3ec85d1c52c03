import Foundation
import Paperboy

/// The status line and header fields of one HTTP response.
struct ResponseHead: Sendable {
    /// The status code, such as 206.
    var status: Int
    /// Header fields in arrival order, names lowercased, names and values trimmed of spaces and
    /// tabs (``field(of:)``).
    var fields: [(name: String, value: String)] = []

    /// The first value of header `name` (lowercase).
    func value(_ name: String) -> String? {
        fields.first { $0.name == name }?.value
    }

    /// Every value of header `name` (lowercase), in order.
    func values(_ name: String) -> [String] {
        fields.filter { $0.name == name }.map(\.value)
    }

    /// The announced body length, unless the body is chunked or the length is absent.
    var contentLength: Int64? {
        if let encoding = value("transfer-encoding"), encoding.lowercased().contains("chunked") { return nil }
        return value("content-length").flatMap { Self.byteCount($0) }
    }

    /// A byte count or position as headers write it (``ByteCount/init(digits:door:)``: decimal
    /// digits only, at most 2^62); `nil` for anything else.
    static func byteCount(_ text: some StringProtocol) -> Int64? {
        (try? ByteCount(digits: text, door: "header"))?.bytes
    }

    /// Parses a status line such as `HTTP/1.1 206 Partial Content` or `HTTP/2 200`.
    static func statusCode(ofStatusLine line: UnsafeRawBufferPointer) -> Int? {
        guard line.count >= 8, line.starts(with: "HTTP/".utf8) else { return nil }
        var index = 5
        while index < line.count, line[index] != UInt8(ascii: " ") { index += 1 }  // the version
        while index < line.count, line[index] == UInt8(ascii: " ") { index += 1 }
        var code = 0
        var digits = 0
        while index < line.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(line[index]) {
            // Three digits make a status code; more is not a status line (and would overflow).
            guard digits < 3 else { return nil }
            code = code * 10 + Int(line[index] - UInt8(ascii: "0"))
            digits += 1
            index += 1
        }
        guard digits == 3, index == line.count || line[index] == UInt8(ascii: " ") else { return nil }
        return (100..<1000).contains(code) ? code : nil
    }

    /// Parses a header line `Name: value` (without its line break): the name lowercased, both
    /// trimmed of spaces and tabs. `nil` for a line without a colon.
    static func field(of line: UnsafeRawBufferPointer) -> (name: String, value: String)? {
        guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else { return nil }
        let name = trimmed(UnsafeRawBufferPointer(rebasing: line[..<colon]))
        let value = trimmed(UnsafeRawBufferPointer(rebasing: line[(colon + 1)...]))
        let lowercased = String(unsafeUninitializedCapacity: name.count) { buffer in
            for (index, byte) in name.enumerated() {
                buffer[index] = (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) ? byte | 0x20 : byte
            }
            return name.count
        }
        return (lowercased, String(decoding: value, as: UTF8.self))
    }

    private static func trimmed(_ bytes: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer {
        func isBlank(_ byte: UInt8) -> Bool { byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }
        var start = 0
        var end = bytes.count
        while start < end, isBlank(bytes[start]) { start += 1 }
        while end > start, isBlank(bytes[end - 1]) { end -= 1 }
        return UnsafeRawBufferPointer(rebasing: bytes[start..<end])
    }
}

/// How a resumed HTTP request is made conditional, and how the answer is read.
///
/// A validator is recorded as `etag:"…"` (strong) when the server sends a strong ETag, else
/// `last-modified:…` (weak), else `etag:W/"…"` (weak). A resume sends `Range: bytes=N-` with
/// `If-Range` carrying the strong ETag or the Last-Modified date, so a server holding another
/// version answers 200 with the whole new version instead of splicing. A weak ETag cannot be
/// sent in `If-Range` (RFC 9110 §13.1.5): such a resource is fetched again from the start.
enum RangeResume {
    /// The `If-Range` value for a recorded validator, or `nil` when it cannot guard a resume.
    static func ifRange(for validator: ResourceValidator?) -> String? {
        guard let value = validator?.value else { return nil }
        if value.hasPrefix("etag:\""), validator?.strength == .strong { return String(value.dropFirst(5)) }
        if value.hasPrefix("last-modified:") { return String(value.dropFirst(14)) }
        return nil
    }

    /// The validator of the version a response carries.
    static func validator(of head: ResponseHead) -> ResourceValidator? {
        if let etag = head.value("etag"), !etag.isEmpty {
            if etag.hasPrefix("\"") { return ResourceValidator("etag:\(etag)", strength: .strong) }
            if let modified = lastModified(head) { return ResourceValidator("last-modified:\(modified)", strength: .weak) }
            return ResourceValidator("etag:\(etag)", strength: .weak)
        }
        if let modified = lastModified(head) { return ResourceValidator("last-modified:\(modified)", strength: .weak) }
        return nil
    }

    private static func lastModified(_ head: ResponseHead) -> String? {
        guard let value = head.value("last-modified"), !value.isEmpty else { return nil }
        return value
    }

    /// `Content-Range: bytes START-END/TOTAL` (TOTAL may be `*`); `nil` unless
    /// START ≤ END < TOTAL, each a byte count (``ResponseHead/byteCount(_:)``).
    static func contentRange(of head: ResponseHead) -> (start: Int64, end: Int64, total: Int64?)? {
        guard let value = head.value("content-range"), value.lowercased().hasPrefix("bytes ") else { return nil }
        let spec = value.dropFirst(6).trimmingCharacters(in: .whitespaces)
        let halves = spec.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard halves.count == 2 else { return nil }
        let bounds = halves[0].split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        guard bounds.count == 2, let start = ResponseHead.byteCount(bounds[0]), let end = ResponseHead.byteCount(bounds[1]),
              start <= end else { return nil }
        if halves[1] == "*" { return (start, end, nil) }
        // The last byte lies inside the resource: a total at most `end` is a lie.
        guard let total = ResponseHead.byteCount(halves[1]), end < total else { return nil }
        return (start, end, total)
    }

    /// The length in `Content-Range: bytes */TOTAL` (the answer to an unsatisfiable range).
    static func unsatisfiedLength(of head: ResponseHead) -> Int64? {
        guard let value = head.value("content-range"), value.lowercased().hasPrefix("bytes */") else { return nil }
        return ResponseHead.byteCount(value.dropFirst(8))
    }

    /// What to tell the sink about a successful (2xx) response to a request for `requestedOffset`.
    ///
    /// - Throws: ``TransferRestart`` when a 206 does not continue at the requested byte, and
    ///   ``TransportError`` `.protocolError` when it cannot be read.
    static func response(for head: ResponseHead, requestedOffset: Int64, url: URL) throws -> TransferResponse {
        let validator = validator(of: head)
        guard head.status == 206 else {
            return TransferResponse(offset: 0, expectedLength: head.contentLength, validator: validator)
        }
        guard let range = contentRange(of: head) else {
            throw TransportError(
                .protocolError, "HTTP 206 from \(url.redactedString) without a usable Content-Range (\(TerminalText.escape(head.value("content-type") ?? "no type")))",
                url: url, isRetryable: false)
        }
        guard range.start == requestedOffset else {
            throw TransferRestart(reason: "server sent bytes from \(range.start), \(requestedOffset) were asked for")
        }
        var response = TransferResponse(offset: range.start, expectedLength: range.total ?? range.end + 1, validator: validator)
        // A range that stops before the end (a chunk's, a split piece's) says so.
        if range.end + 1 < response.expectedLength ?? .max { response.end = range.end + 1 }
        return response
    }
}
