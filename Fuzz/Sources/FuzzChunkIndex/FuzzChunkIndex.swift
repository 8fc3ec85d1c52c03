import Foundation
import FuzzSupport
@testable import Paperboy

/// The reader of publishers' chunk indexes (`ChunkIndex.decode`, which `ChunkIndex.read` and
/// every fetched index go through), with limits small enough for mutations to reach them.
///
/// Promises:
/// - what the reader accepts re-encodes to the same bytes (one encoding per index: nothing
///   ignored, nothing normalized);
/// - its chunks follow one another from offset 0 and add up to exactly the file's size, each of
///   length 1 to the maximum and, but the last, at least the minimum; the file and the count lie
///   within the limits;
/// - a refusal names the index, whatever the bytes; nothing traps.
@main
enum FuzzChunkIndex {
    static func main() { Fuzzer.main(fuzz) }
}

let limits = ChunkIndex.Limits(maxFileSize: 64 << 20, maxChunks: 400)

@_cdecl("LLVMFuzzerTestOneInput")
func fuzz(_ bytes: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    let input = Fuzzer.data(bytes, count)
    let index: ChunkIndex
    do {
        index = try ChunkIndex.decode(input, from: "fuzz index", limits: limits)
    } catch {
        Fuzzer.expect(error.description.hasPrefix("chunk index fuzz index: "), "the error does not name the index: \(error)")
        return 0
    }
    Fuzzer.expect(index.encoded() == input, "accepted \(input.count) bytes that re-encode to \(index.encoded().count) other bytes")
    Fuzzer.expect(index.fileSize <= limits.maxFileSize, "accepted a file of \(index.fileSize) bytes")
    Fuzzer.expect(index.chunks.count <= limits.maxChunks, "accepted \(index.chunks.count) chunks")
    let parameters = index.parameters
    var offset: Int64 = 0
    for (number, chunk) in index.chunks.enumerated() {
        Fuzzer.expect(chunk.offset == offset, "chunk \(number) starts at \(chunk.offset), not \(offset)")
        Fuzzer.expect(chunk.length >= 1 && chunk.length <= parameters.maximum, "chunk \(number) has length \(chunk.length)")
        Fuzzer.expect(number == index.chunks.count - 1 || chunk.length >= parameters.minimum,
                      "chunk \(number) of \(index.chunks.count) has length \(chunk.length) below the minimum")
        offset += Int64(chunk.length)
    }
    Fuzzer.expect(offset == index.fileSize, "chunks add up to \(offset) bytes, not \(index.fileSize)")
    return 0
}
