import Foundation
import FuzzSupport
@testable import Paperboy
@testable import PaperboyClient
@testable import PaperboyWire
import PaperboyFraming

/// Daemon replies, events and questions: a daemon's frame checked by the bounded reader
/// (`DaemonProtocol.reply`) and decoded into the message the client expects, as
/// `ClientConnection` does (`received(_:)`, the `HELLO` of its handshake, the answer a request
/// awaits), then taken in as the client takes it: its mirror of the daemon (`DaemonMirror`, where
/// a `WireAsset` becomes an `AssetStatus`), `libraryError`, `authChallenge`, outcomes, the shelf.
/// The first byte of the input chooses the message (`A` the first of `replies`), the rest is the payload.
///
/// On a thread of `DaemonProtocol.jsonLimits.threadStackSize` bytes (768 KiB), the stack of the
/// client's reader (`FramedConnection.start(readerStackSize:)`) and of its handshake's thread:
/// events and questions are decoded there. An answer is decoded by the task awaiting it, on a
/// thread of the cooperative pool, whose stack is the process's default (`ulimit -s`: 8 MiB
/// here, 2 MiB when unlimited), larger.
///
/// Promise: every payload is decoded or refused with a `bad-request` `WireError`, the only code
/// `DaemonProtocol.reply` and `DaemonProtocol.decode` throw (the client drops such an event or
/// question, and fails the request awaiting such an answer); nothing traps or overflows the
/// reader's stack, taking in what decoded included (the client's totals of a listing's bytes
/// saturate: seed `ok-assets-bytes-int64-max` trapped before, docs/Security.md, "Fuzzing").
@main
enum FuzzReply {
    static func main() { Fuzzer.main(fuzz) }
}

typealias Kind = DaemonProtocol.Kind

/// Each message a daemon may send a client: the frame's kind, the type the client decodes it
/// as, and what the client does with it.
let replies: [(kind: String, type: String, take: @Sendable (CheckedFrame) throws(WireError) -> Void)] = [
    (Kind.hello, "DaemonHello", { frame throws(WireError) in
        _ = URL(fileURLWithPath: try DaemonProtocol.decode(DaemonHello.self, frame).library, isDirectory: true)
    }),
    (Kind.error, "WireError", { frame throws(WireError) in _ = try DaemonProtocol.decode(WireError.self, frame).libraryError }),
    (Kind.event, "Event", { frame throws(WireError) in take(try DaemonProtocol.decode(Event.self, frame)) }),
    (Kind.challenge, "ChallengeMessage", { frame throws(WireError) in
        let message = try DaemonProtocol.decode(ChallengeMessage.self, frame)
        _ = message.authChallenge
        _ = Request.answer(AnswerRequest(id: 1, challenge: message.challenge, .performDefaultHandling)).frame
    }),
    (Kind.resuming, "ResumingMessage", { frame throws(WireError) in
        let message = try DaemonProtocol.decode(ResumingMessage.self, frame)
        // With no delegate, the client sends the request back as it came.
        _ = Request.resumeWith(ResumeWithRequest(id: 1, resuming: message.resuming, request: message.request)).frame
    }),
    (Kind.ok, "EmptyReply", { frame throws(WireError) in _ = try DaemonProtocol.decode(EmptyReply.self, frame).id }),
    (Kind.ok, "IssueReply", { frame throws(WireError) in
        let reply = try DaemonProtocol.decode(IssueReply.self, frame)
        var mirror = DaemonMirror()
        take(reply.issue, into: &mirror)
    }),
    (Kind.ok, "AssetReply", { frame throws(WireError) in
        take(try DaemonProtocol.decode(AssetReply.self, frame).asset)
    }),
    (Kind.ok, "AddAssetsReply", { frame throws(WireError) in
        let reply = try DaemonProtocol.decode(AddAssetsReply.self, frame)
        var mirror = DaemonMirror()
        for id in reply.assets { mirror.recordAdded(id, issue: "i", request: sampleRequest, userInfo: nil, downloading: true) }
        _ = mirror.counts(ofIssue: "i")
    }),
    (Kind.ok, "StatusReply", { frame throws(WireError) in
        let reply = try DaemonProtocol.decode(StatusReply.self, frame)
        var mirror = DaemonMirror()
        switch reply.subject {
        case .asset(let asset): take(asset)
        case .issue(let issue): take(issue, into: &mirror)
        case .issues(let issues): for issue in issues { take(issue, into: &mirror) }
        }
        mirror.badge = max(0, reply.badge)
    }),
    (Kind.ok, "ReloadReply", { frame throws(WireError) in _ = try DaemonProtocol.decode(ReloadReply.self, frame).addedIssues }),
    (Kind.ok, "ReadReply", { frame throws(WireError) in
        let reply = try DaemonProtocol.decode(ReadReply.self, frame)
        var mirror = DaemonMirror()
        if let issue = reply.issue { take(issue, into: &mirror) }
    }),
    (Kind.ok, "PurgeReply", { frame throws(WireError) in
        let reply = try DaemonProtocol.decode(PurgeReply.self, frame)
        var mirror = known(asset: "a", issue: reply.removed.first ?? "i")
        for name in reply.removed { mirror.removeIssue(name) }
    }),
    (Kind.ok, "ShelfReply", { frame throws(WireError) in
        // As `DaemonBackend.shelfPage`, `shelf()`, `conditions()` and `issues()` do with a page.
        let reply = try DaemonProtocol.decode(ShelfReply.self, frame)
        var mirror = DaemonMirror()
        for issue in reply.issues {
            mirror.record(issue)
            _ = URL(fileURLWithPath: issue.contentPath, isDirectory: true)
        }
        mirror.badge = max(0, reply.badge)
        mirror.reading = reply.reading
        _ = LibraryShelf(libraryPath: reply.libraryPath, badge: reply.badge, reading: reply.reading, bandwidth: reply.bandwidth,
                         issues: reply.issues, damagedRows: (reply.damagedRows ?? []).compactMap(\.row), network: reply.network)
        _ = LibraryConditions(network: reply.network, bandwidthLimit: reply.bandwidth?.limit)
    }),
    (Kind.ok, "AssetsReply", { frame throws(WireError) in
        // As `DaemonBackend.listAssets` and `forEachAssetListing` do with a page.
        let reply = try DaemonProtocol.decode(AssetsReply.self, frame)
        for asset in reply.assets {
            let listing = AssetListing(
                identifier: asset.id, urlString: asset.request?.url.absoluteString ?? "", destinationPath: asset.request?.destinationPath,
                state: asset.state.state, totalBytesWritten: asset.totalBytesWritten, expectedTotalBytes: asset.expectedTotalBytes,
                attempts: asset.attempts, failureCode: asset.state.failure.map(AssetListing.failureCode(of:)),
                sha256: asset.request?.sha256, bytesReused: max(0, asset.bytesReused ?? 0))
            // What `paperboy status` then prints of it.
            _ = listing.redactedURLString
        }
        var mirror = DaemonMirror()
        mirror.record(WireIssue(name: "i", date: Date(timeIntervalSince1970: 0), status: "none", isNew: false, contentPath: "/i"))
        mirror.recordListing(reply.assets, ofIssue: "i")
        for asset in reply.assets { _ = mirror.assets[asset.id]?.status }
    }),
    (Kind.ok, "StatesReply", { frame throws(WireError) in
        for entry in try DaemonProtocol.decode(StatesReply.self, frame).states { _ = (entry.state.state.isActive, entry.state.failure) }
    }),
    (Kind.ok, "NotifyReply", { frame throws(WireError) in
        let reply = try DaemonProtocol.decode(NotifyReply.self, frame)
        let result: ContentAvailableResult = switch reply.result {
        case .refreshed: .refresh
        case .throttled: .throttled(nextAllowed: reply.nextAllowed ?? Date())
        case .ignored: .ignored
        }
        _ = result
    }),
    (Kind.ok, "WaitReply", { frame throws(WireError) in
        let reply = try DaemonProtocol.decode(WaitReply.self, frame)
        _ = reply.assetOutcome
        _ = (reply.missing ?? []).map { ($0.asset ?? "", $0.assetOutcome) }
    }),
    (Kind.ok, "CountsReply", { frame throws(WireError) in
        var counts: [String: AssetCounts] = [:]
        for issue in try DaemonProtocol.decode(CountsReply.self, frame).issues { counts[issue.name] = issue.counts }
    }),
    (Kind.ok, "ActivityReply", { frame throws(WireError) in _ = try DaemonProtocol.decode(ActivityReply.self, frame).activity }),
]

/// The request of the assets the target makes up.
let sampleRequest = AssetRequest(url: URL(fileURLWithPath: "/a.pdf"))

/// A mirror that knows the issue `issue`, its one asset `asset` listed, and an event about it
/// (what an answer or an event about that asset then changes).
func known(asset: String, issue: String) -> DaemonMirror {
    var mirror = DaemonMirror()
    mirror.record(WireIssue(name: issue, date: Date(timeIntervalSince1970: 0), status: "downloading", isNew: true, contentPath: "/i"))
    let wire = WireAsset(id: asset, issue: issue, request: sampleRequest, userInfo: nil, state: WireState(.downloading),
                         totalBytesWritten: 1, expectedTotalBytes: 2, attempts: 0)
    mirror.recordListing([wire], ofIssue: issue)
    mirror.apply(.progress(asset: asset, bytesWritten: 1, totalBytesWritten: 1, expectedTotalBytes: 2))
    return mirror
}

/// An event as the client takes it: applied to the mirror on the reader's thread (its asset
/// known, so that it changes something), then what `DaemonBackend.dispatch` reads of it.
func take(_ event: Event) {
    var mirror = event.asset.map { known(asset: $0, issue: event.issue ?? "i") } ?? DaemonMirror()
    mirror.apply(event)
    switch event {
    case .failed(_, _, let wire): _ = wire.libraryError
    case .state(_, _, let wire): _ = wire.failure
    default: break
    }
    if let issue = event.issue { _ = mirror.counts(ofIssue: issue) }
}

/// An asset from an answer about it, recorded in a mirror that knew it and heard an event
/// about it since the request (`DaemonBackend.record(_:since:)`), then read back.
func take(_ asset: WireAsset) {
    var mirror = known(asset: asset.id, issue: asset.issue)
    mirror.record(asset, since: 0)
    _ = mirror.assets[asset.id]?.status
    _ = mirror.counts(ofIssue: asset.issue)
}

/// An issue from an answer, recorded (its assets too) as `DaemonBackend.record(_:badge:)` does.
func take(_ issue: WireIssue, into mirror: inout DaemonMirror) {
    mirror.record(issue)
    _ = URL(fileURLWithPath: issue.contentPath, isDirectory: true)
    _ = mirror.status(ofIssue: issue.name)
    _ = mirror.counts(ofIssue: issue.name)
}

@_cdecl("LLVMFuzzerTestOneInput")
func fuzz(_ bytes: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    let input = Fuzzer.data(bytes, count)
    guard let first = input.first else { return 0 }
    // The seeds of Fuzz/Corpus/reply start with "A" plus the message's index in `replies`.
    let reply = replies[Int(first &- UInt8(ascii: "A")) % replies.count]
    let frame = Frame(kind: reply.kind, payload: Data(input.dropFirst()))
    Fuzzer.onThread(stackSize: DaemonProtocol.jsonLimits.threadStackSize) {
        do throws(WireError) {
            // As the client does: the bounded reader first; for an answer, its id (which finds
            // the request awaiting it), then the message.
            let checked = try DaemonProtocol.reply(frame)
            if reply.kind == Kind.ok || reply.kind == Kind.error {
                do throws(WireError) {
                    _ = try DaemonProtocol.decode(EmptyReply.self, checked)
                } catch {
                    Fuzzer.expect(error.code == DaemonProtocol.ErrorCode.badRequest, "\(reply.type)'s id refused with \(error.code)")
                }
            }
            try reply.take(checked)
        } catch {
            Fuzzer.expect(error.code == DaemonProtocol.ErrorCode.badRequest, "\(reply.type) refused with \(error.code)")
        }
    }
    return 0
}
