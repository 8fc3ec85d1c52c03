// Examples/Embedding ported to `paperboy daemon`: the same app, with the library served by the
// daemon through PaperboyClient instead of embedded in the process. Downloads go on when the app
// quits; a file finished meanwhile is handed over at the next launch (see docs/Daemon.md,
// "Porting from Library to PaperboyClient").
//
//   paperboy daemon --config paperboy.toml &
//   swift run DaemonEmbeddingExample SOCKET [FOLDER]
import Foundation
import Paperboy
import PaperboyClient

/// Keeps each finished file by moving it into the issue's folder, as a NewsstandKit app did.
final class ShelfDelegate: RemoteDownloadDelegate {
    func download(_ asset: RemoteAsset, didWriteData bytesWritten: Int64, totalBytesWritten: Int64, expectedTotalBytes: Int64?) {
        let total = expectedTotalBytes.map { " of \($0)" } ?? ""
        print("  \(asset.identifier.prefix(8)): \(totalBytesWritten)\(total) bytes")
    }

    func download(_ asset: RemoteAsset, didResumeAt totalBytesWritten: Int64, expectedTotalBytes: Int64?) {
        print("  \(asset.identifier.prefix(8)): resuming at byte \(totalBytesWritten)")
    }

    func download(_ asset: RemoteAsset, didFinishDownloadingTo destinationURL: URL) async throws {
        // The file waits in the daemon's inbox until this returns: move it where the app wants it.
        guard case .string(let name)? = asset.userInfo?["file"], let issue = try await asset.issue() else { return }
        try FileManager.default.createDirectory(at: issue.contentURL, withIntermediateDirectories: true)
        let target = issue.contentURL.appendingPathComponent(name)
        try? FileManager.default.removeItem(at: target)
        try FileManager.default.moveItem(at: destinationURL, to: target)
        print("  \(asset.identifier.prefix(8)): saved \(target.path)")
    }

    func download(_ asset: RemoteAsset, didFailWithError error: LibraryError) {
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
guard arguments.count > 1 else {
    print("usage: DaemonEmbeddingExample SOCKET [FOLDER]  (SOCKET: the daemon's, see `[daemon] socket`)")
    exit(2)
}
let socket = URL(fileURLWithPath: arguments[1])
let folder = arguments.count > 2
    ? URL(fileURLWithPath: arguments[2])
    : FileManager.default.temporaryDirectory.appendingPathComponent("paperboy-daemon-embedding-example")

// The publisher's file, generated here so the example needs no server.
let source = folder.appendingPathComponent("publisher/2026-11-21.pdf")
try FileManager.default.createDirectory(at: source.deletingLastPathComponent(), withIntermediateDirectories: true)
try Data(repeating: 0x25, count: 3 << 20).write(to: source)

let library = try await PaperboyClient.connect(socket: socket, name: "DaemonEmbeddingExample")
let delegate = ShelfDelegate()

// At launch: reconnect whatever was on its way when the app last quit (or crashed).
for asset in try await library.downloadingAssets() {
    print("reconnecting \(asset.identifier)")
    try await asset.download(delegate: delegate)
}

let name = "2026-11-21"
let events = try await library.events()
let found = try await library.issue(named: name)
let issue = if let found { found } else { try await library.addIssue(name: name, date: Date()) }
var added = false
if try await issue.assets().isEmpty {
    added = true
    let asset = try await issue.addAsset(AssetRequest(url: source), userInfo: ["file": "magazine.pdf"])
    try await asset.download(delegate: delegate)
    switch try await asset.waitUntilFinished() {
    case .delivered: print("  \(asset.identifier.prefix(8)): delivered")
    case .failed(let error): print("  \(asset.identifier.prefix(8)): gave up: \(error)")
    case .cancelled, .closed: print("  \(asset.identifier.prefix(8)): stopped")
    }
}

// Wait for the issue to complete (the event comes once the shelf is updated), then show it.
let complete = try await library.issue(named: name)?.status == .available
if added || !complete {
    for await event in events {
        if case .issueAvailable(name) = event { break }
    }
}
let shelf = try await library.issue(named: name) ?? issue
print("\(shelf.name): \(shelf.status), new: \(shelf.isNew), badge: \(try await library.badgeCount())")
library.disconnect()
