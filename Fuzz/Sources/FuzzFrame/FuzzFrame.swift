#if canImport(Glibc)
import Glibc
#endif
import Foundation
import FuzzSupport
import PaperboyDaemon
import PaperboyWire
import PaperboyFraming

/// The frame reader (`FrameReader`, the daemon's connections and the helpers' pipes): bytes as a
/// peer would write them, read frame by frame until the stream ends or is refused.
///
/// Promises: every frame read is `KIND LENGTH` with a kind of 1 to 16 capitals and a payload of
/// exactly LENGTH bytes within the limit, taken in order from the bytes written, and the only
/// errors are the end of the stream, garbage and a frame too large.
@main
enum FuzzFrame {
    static func main() { Fuzzer.main(fuzz) }
}

@_cdecl("LLVMFuzzerTestOneInput")
func fuzz(_ bytes: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    let input = Fuzzer.data(bytes, count)
    // The daemon's limit, and a small one so that `tooLarge` is reached with small inputs.
    let limit = input.first.map { $0 & 1 == 0 } ?? true ? DaemonProtocol.maxPayloadLength : 64
    var ends: [Int32] = [0, 0]
    guard pipe(&ends) == 0 else { return 0 }
    let (readEnd, writeEnd) = (ends[0], ends[1])
    defer { close(readEnd) }
    // A pipe holds 64 KiB: a larger input is written by a thread while the reader reads.
    let writer = Thread {
        input.withUnsafeBytes { raw in
            var sent = 0
            while sent < raw.count {
                let wrote = write(writeEnd, raw.baseAddress!.advanced(by: sent), raw.count - sent)
                if wrote <= 0 { break }
                sent += wrote
            }
        }
        close(writeEnd)
    }
    writer.start()
    var reader = FrameReader()
    var offset = 0
    while true {
        do {
            let frame = try reader.next(from: readEnd, maxLength: { _ in limit }, wait: { _ in })
            Fuzzer.expect((1...16).contains(frame.kind.utf8.count) && frame.kind.utf8.allSatisfy { (65...90).contains($0) },
                          "kind \(frame.kind)")
            Fuzzer.expect(frame.payload.count <= limit, "a \(frame.payload.count)-byte payload above the limit \(limit)")
            let newline = input[offset...].firstIndex(of: UInt8(ascii: "\n"))
            Fuzzer.expect(newline != nil && input[offset..<newline!].starts(with: Data((frame.kind + " ").utf8)),
                          "frame \(frame.kind) is not where the stream has its header")
            let payloadStart = newline! + 1
            Fuzzer.expect(input.count - payloadStart >= frame.payload.count
                              && input[payloadStart..<(payloadStart + frame.payload.count)] == frame.payload,
                          "the payload of \(frame.kind) is not the bytes after its header")
            offset = payloadStart + frame.payload.count
        } catch .closed, .garbage, .tooLarge {
            break
        } catch {
            Fuzzer.expect(false, "unexpected error \(error)")
        }
    }
    // Drain what the reader left, so the writer ends.
    var sink = [UInt8](repeating: 0, count: 4096)
    while read(readEnd, &sink, sink.count) > 0 {}
    return 0
}
