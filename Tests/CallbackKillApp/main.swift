// An app embedding Paperboy that is killed inside `didFinishDownloadingTo`, for
// `CallbackKillTests`: it downloads one file with a delegate that writes one byte to standard
// output when its `didFinish` starts, then never returns; the test sends SIGKILL after the byte.
//
//   CallbackKillApp LIBRARY_FOLDER SOURCE_FILE
import Foundation
import Paperboy
import PaperboyFile

final class StuckDelegate: AssetDownloadDelegate {
    func download(_ asset: AssetDownload, didFinishDownloadingTo destinationURL: URL) async throws {
        var byte: UInt8 = 0x21
        _ = write(1, &byte, 1)
        while true { try await Task.sleep(for: .seconds(3600)) }
    }
}

let arguments = CommandLine.arguments
guard arguments.count == 3 else {
    FileHandle.standardError.write(Data("usage: CallbackKillApp LIBRARY_FOLDER SOURCE_FILE\n".utf8))
    exit(2)
}
let library = try Library.open(at: URL(fileURLWithPath: arguments[1]), transports: TransportRegistry([FileTransport()]))
let issue = try await library.addIssue(name: "killed", date: Date())
let asset = try await issue.addAsset(AssetRequest(url: URL(fileURLWithPath: arguments[2])))
try await asset.download(delegate: StuckDelegate())
while true { try await Task.sleep(for: .seconds(3600)) }
