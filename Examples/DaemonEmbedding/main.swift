// Examples/Embedding served by `paperboy daemon`: the same app, with only the line that opens the
// library (and the imports, and the socket argument) changed. Downloads go on when the app quits;
// a file finished meanwhile is handed over at the next launch (see docs/Daemon.md, "Moving an app
// to the daemon"). `EmbeddingExamplesDifferOnlyInTheOpenLine` checks that nothing else differs.
//
//   paperboy daemon --config paperboy.toml &
//   swift run DaemonEmbeddingExample [FOLDER] [SOCKET]
import Foundation
import Paperboy
import PaperboyClient

/// Keeps each finished file by moving it into the issue's folder, as a NewsstandKit app did.
final class ShelfDelegate: AssetDownloadDelegate {
    func download(_ asset: AssetDownload, didWriteData bytesWritten: Int64, totalBytesWritten: Int64, expectedTotalBytes: Int64?) {
        let total = expectedTotalBytes.map { " of \($0)" } ?? ""
        print("  \(asset.identifier.prefix(8)): \(totalBytesWritten)\(total) bytes")
    }

    func download(_ asset: AssetDownload, didResumeAt totalBytesWritten: Int64, expectedTotalBytes: Int64?) {
        print("  \(asset.identifier.prefix(8)): resuming at byte \(totalBytesWritten)")
    }

    func download(_ asset: AssetDownload, didFinishDownloadingTo destinationURL: URL) async throws {
        // The file is only valid during this call: move it where the app wants it.
        guard case .string(let name)? = asset.userInfo?["file"], let issue = try await asset.issue() else { return }
        try FileManager.default.createDirectory(at: issue.contentURL, withIntermediateDirectories: true)
        let target = issue.contentURL.appendingPathComponent(name)
        try? FileManager.default.removeItem(at: target)
        try FileManager.default.moveItem(at: destinationURL, to: target)
        print("  \(asset.identifier.prefix(8)): saved \(target.path)")
    }

    func download(_ asset: AssetDownload, didFailWithError error: LibraryError) {
        // `reason` is what an app branches on (no digging into `transportError`).
        switch error.reason {
        case .notFound: print("  \(asset.identifier.prefix(8)): no longer at the publisher: \(error)")
        case .noSpace: print("  \(asset.identifier.prefix(8)): the disk is full: \(error)")
        case .cancelled: print("  \(asset.identifier.prefix(8)): cancelled")
        default: print("  \(asset.identifier.prefix(8)): failed: \(error)")
        }
    }
}

extension JSONValue {
    subscript(key: String) -> JSONValue? {
        if case .object(let object) = self { return object[key] }
        return nil
    }
}

let arguments = CommandLine.arguments
let folder = arguments.count > 1
    ? URL(fileURLWithPath: arguments[1])
    : FileManager.default.temporaryDirectory.appendingPathComponent("paperboy-embedding-example")
let socket = URL(fileURLWithPath: arguments.count > 2 ? arguments[2] : "\(ProcessInfo.processInfo.environment["XDG_RUNTIME_DIR"] ?? "/tmp")/paperboy/daemon.sock")

// The publisher's file, generated here so the example needs no server.
let source = folder.appendingPathComponent("publisher/2026-11-21.pdf")
try FileManager.default.createDirectory(at: source.deletingLastPathComponent(), withIntermediateDirectories: true)
try Data(repeating: 0x25, count: 3 << 20).write(to: source)

let library = try await Library.connect(socket: socket, name: "DaemonEmbeddingExample")
let delegate = ShelfDelegate()

// At launch: reconnect whatever was on its way when the app last quit (or crashed).
for asset in try await library.downloadingAssets() {
    print("reconnecting \(asset.identifier)")
    try await asset.download(delegate: delegate)
}

let name = "2026-11-21"
let found = try await library.issue(named: name)
let issue = if let found { found } else { try await library.addIssue(name: name, date: Date()) }
if try await issue.assets().isEmpty {
    let asset = try await issue.addAsset(AssetRequest(url: source), userInfo: ["file": "magazine.pdf"])
    try await asset.download(delegate: delegate)
    switch try await asset.waitUntilFinished() {
    case .delivered: print("  \(asset.identifier.prefix(8)): delivered")
    case .failed(let error): print("  \(asset.identifier.prefix(8)): gave up: \(error)")
    case .cancelled, .closed: print("  \(asset.identifier.prefix(8)): stopped")
    }
}

// Wait for the issue to complete, then update the shelf.
switch try await issue.waitUntilAvailable() {
case .available:
    print("\(issue.name): \(try await issue.status()), new: \(try await issue.isNew()), badge: \(try await library.badgeCount())")
case .incomplete(let missing):
    print("\(issue.name): \(missing.count) asset(s) missing: \(missing.values.map { "\($0)" })")
}
try await library.setCurrentlyReadingIssue(issue)
try await issue.markRead()
let reading = try await library.currentlyReadingIssue()
print("reading \(reading?.name ?? "nothing"), badge: \(try await library.badgeCount())")
await library.close()
