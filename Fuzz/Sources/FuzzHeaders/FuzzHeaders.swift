import Foundation
import FuzzSupport
@testable import Paperboy
@testable import PaperboyHTTP

/// An HTTP response head as libcurl hands it to the transport, line by line: the status line
/// (`ResponseHead.statusCode`), fields (`ResponseHead.field`), then what the transport reads
/// from them: the `Content-Encoding` of a success (`ContentEncoding.requireIdentity`), then its
/// `Content-Length`, `Content-Range` and validator (`RangeResume.response`), `Retry-After` of a
/// failure (`TransportError.http`). The first line of the input is the offset the request
/// resumed from (decimal), the rest the head.
///
/// Promises: nothing traps; a success begins at the requested offset with a length of at
/// least that offset, or is refused; a success whose `Content-Encoding` names gzip, deflate,
/// br or compress is refused, with a message a terminal shows as it is; a retry delay lies
/// between 0 and a day.
@main
enum FuzzHeaders {
    static func main() { Fuzzer.main(fuzz) }
}

let url = URL(string: "https://cdn.example.com/issues/a.pdf")!
let now = Date(timeIntervalSince1970: 1_790_000_000)

@_cdecl("LLVMFuzzerTestOneInput")
func fuzz(_ bytes: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    let input = UnsafeRawBufferPointer(start: bytes, count: count)
    var lines = input.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
    guard !lines.isEmpty else { return 0 }
    let offset = Int64(String(decoding: lines.removeFirst().prefix(18).prefix { (48...57).contains($0) }, as: UTF8.self)) ?? 0
    var head: ResponseHead?
    for line in lines {
        // As `CurlRequest.receiveHeader`: line breaks trimmed, a status line starts a head.
        var end = line.endIndex
        while end > line.startIndex, input[end - 1] == UInt8(ascii: "\r") { end -= 1 }
        let text = UnsafeRawBufferPointer(rebasing: input[line.startIndex..<end])
        if let status = ResponseHead.statusCode(ofStatusLine: text) {
            head = ResponseHead(status: status)
        } else if let field = ResponseHead.field(of: text) {
            head?.fields.append(field)
        }
    }
    guard let head else { return 0 }
    _ = head.contentLength
    _ = RangeResume.unsatisfiedLength(of: head)
    switch head.status {
    case 200..<300:
        // As `CurlRequest.headComplete`: an encoded body is refused before anything else.
        do {
            try ContentEncoding.requireIdentity(head, url: url)
        } catch let error as TransportError {
            Fuzzer.expect(!error.message.unicodeScalars.contains { TerminalText.needsEscape($0) },
                          "a control character in the refusal: \(error.message.debugDescription)")
            return 0
        } catch {
            Fuzzer.expect(false, "requireIdentity threw \(error)")
        }
        let encodings = head.values("content-encoding").joined(separator: ",").lowercased()
        for coding in ["gzip", "deflate", "br", "compress"] {
            Fuzzer.expect(!encodings.contains(coding), "a body encoded with '\(encodings)' was accepted as the file")
        }
        if let response = try? RangeResume.response(for: head, requestedOffset: max(offset, 0), url: url) {
            Fuzzer.expect(response.offset == 0 || response.offset == max(offset, 0), "began at \(response.offset), \(offset) was asked for")
            Fuzzer.expect((response.expectedLength ?? response.offset) >= response.offset,
                          "a length of \(response.expectedLength ?? 0) below the offset \(response.offset)")
        }
    default:
        let error = TransportError.http(head, url: url, now: now)
        if let delay = error.retryAfter {
            Fuzzer.expect(delay >= .zero && delay <= TransportError.maxRetryAfter, "Retry-After read as \(delay)")
        }
    }
    return 0
}
