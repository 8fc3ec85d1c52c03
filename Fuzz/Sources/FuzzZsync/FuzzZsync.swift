import Foundation
import FuzzSupport
@testable import Paperboy

/// The reader of zsync control files (`ZsyncIndex.decode`, which every fetched control file goes
/// through), with limits small enough for mutations to reach them; then a rolling match of what
/// it accepts against a small seed.
///
/// Promises:
/// - what the reader accepts has a power-of-two block size within the bounds, Hash-Lengths in
///   range, a file and a block count within the limits, `⌈Length / Blocksize⌉` blocks, and
///   exactly the checksum bytes they need after the header;
/// - its blocks follow one another from offset 0 and add up to the file's size;
/// - a rolling match against a seed places each block only where all its bytes lie in the seed;
/// - a refusal names the control file, whatever the bytes; nothing traps.
@main
enum FuzzZsync {
    static func main() { Fuzzer.main(fuzz) }
}

let limits = ZsyncIndex.Limits(maxFileSize: 64 << 20, maxBlocks: 400)
let seedSize = 5000
let seed: URL = {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("fuzz-zsync-seed-\(getpid())")
    try? Data((0..<seedSize).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ $0 >> 8) }).write(to: url)
    return url
}()

@_cdecl("LLVMFuzzerTestOneInput")
func fuzz(_ bytes: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    let input = Fuzzer.data(bytes, count)
    let index: ZsyncIndex
    do {
        index = try ZsyncIndex.decode(input, from: "fuzz control", limits: limits)
    } catch {
        Fuzzer.expect(error.description.hasPrefix("zsync control file fuzz control: "), "the error does not name the control file: \(error)")
        return 0
    }
    let blockSize = index.blockSize
    Fuzzer.expect(blockSize.nonzeroBitCount == 1 && ZsyncIndex.Limits.blockSizes.contains(blockSize), "accepted a block size of \(blockSize)")
    Fuzzer.expect((1...2).contains(index.sequenceMatches) && (2...4).contains(index.rsumBytes) && (3...16).contains(index.checksumBytes),
                  "accepted Hash-Lengths \(index.sequenceMatches),\(index.rsumBytes),\(index.checksumBytes)")
    Fuzzer.expect(index.fileSize >= 0 && index.fileSize <= limits.maxFileSize, "accepted a file of \(index.fileSize) bytes")
    let blocks = index.fileSize == 0 ? 0 : Int((index.fileSize - 1) / Int64(blockSize) + 1)
    Fuzzer.expect(index.blockCount == blocks && blocks <= limits.maxBlocks, "accepted \(index.blockCount) blocks for \(blocks)")
    Fuzzer.expect(index.checksums.count == blocks * index.checksumBytes, "holds \(index.checksums.count) checksum bytes for \(blocks) blocks")
    Fuzzer.expect(index.sha1.count == 20, "a SHA-1 of \(index.sha1.count) bytes")
    let header = input.range(of: Data("\n\n".utf8))!.lowerBound + 2
    Fuzzer.expect(input.count - header == blocks * (index.rsumBytes + index.checksumBytes), "\(input.count - header) bytes after the header for \(blocks) blocks")
    var offset: Int64 = 0
    for block in 0..<index.blockCount {
        Fuzzer.expect(index.offset(ofPiece: block) == offset, "block \(block) starts at \(index.offset(ofPiece: block)), not \(offset)")
        let length = index.length(ofPiece: block)
        Fuzzer.expect(length >= 1 && length <= blockSize, "block \(block) has length \(length)")
        offset += Int64(length)
    }
    Fuzzer.expect(offset == index.fileSize, "blocks add up to \(offset) bytes, not \(index.fileSize)")
    if let found = index.matches(inFileAt: seed) {
        for (block, place) in found.enumerated() where place >= 0 {
            Fuzzer.expect(place + Int64(index.length(ofPiece: block)) <= Int64(seedSize), "block \(block) placed at \(place), past the seed's end")
        }
    }
    return 0
}
