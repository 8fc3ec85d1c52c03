import Foundation
import FuzzSupport
@testable import Paperboy

/// Archives (`Unpacker.unzip`, what delivery does with an asset marked `unpack = "zip"`): the
/// plan (`ArchivePlan`: entry paths, links resolved against the archive) and the limits, then
/// the extraction, into a folder of its own, with limits small enough for a fuzzer's inputs.
///
/// Promises: an archive is refused with a `LibraryError`, or unpacked with nothing outside the
/// issue folder, no link leading out of it, at most the limit written, and no staging folder left.
@main
enum FuzzArchive {
    static func main() { Fuzzer.main(fuzz) }
}

let archiveURL = Fuzzer.scratch.appendingPathComponent("asset.zip")
let issueFolder = Fuzzer.scratch.appendingPathComponent("issue")
let staging = issueFolder.appendingPathComponent(".unpack-asset")
let limits = Unpacker.Limits(maxBytes: 1 << 20, maxRatio: 200)
/// No free-space floor: the fuzzer's archives are small, and the floor has tests of its own.
let space = FreeSpaceGuard(root: Fuzzer.scratch, floor: FreeSpaceFloor(bytes: 0))

@_cdecl("LLVMFuzzerTestOneInput")
func fuzz(_ bytes: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    let files = FileManager.default
    try? files.removeItem(at: issueFolder)
    try? files.createDirectory(at: issueFolder, withIntermediateDirectories: true)
    guard (try? Fuzzer.data(bytes, count).write(to: archiveURL)) != nil else { return 0 }
    do {
        try Unpacker.unzip(archiveURL, named: "https://cdn.example.com/a.zip", into: issueFolder, staging: staging, limits: limits, space: space)
    } catch {
        Fuzzer.expect(!files.fileExists(atPath: staging.path), "a refused archive left its staging folder")
        return 0
    }
    Fuzzer.expect(!files.fileExists(atPath: staging.path), "an unpacked archive left its staging folder")
    // Everything written is inside the issue folder, and links resolve inside it.
    let root = issueFolder.resolvingSymlinksInPath().path
    var written: Int64 = 0
    guard let entries = files.enumerator(atPath: issueFolder.path) else { return 0 }
    for case let path as String in entries {
        let url = issueFolder.appendingPathComponent(path)
        let real = url.resolvingSymlinksInPath().path
        Fuzzer.expect(real == root || real.hasPrefix(root + "/"), "\(path) leads to \(real), outside the issue folder")
        if let attributes = try? files.attributesOfItem(atPath: url.path), attributes[.type] as? FileAttributeType == .typeRegular {
            written += (attributes[.size] as? Int64) ?? Int64((attributes[.size] as? Int) ?? 0)
        }
    }
    Fuzzer.expect(written <= limits.maxBytes, "\(written) bytes written, above the limit \(limits.maxBytes)")
    return 0
}
