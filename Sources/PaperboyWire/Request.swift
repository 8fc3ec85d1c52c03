import Foundation
import Paperboy

/// A request, client → daemon: one case per kind of docs/Daemon.md, each with its payload.
///
/// The kind travels in the frame's header, the payload as JSON: ``init(_:)`` reads a checked
/// frame (the daemon's only way in), ``frame`` writes one (the client's way out).
package enum Request: Sendable {
    case hello(ClientHello)
    case addIssue(AddIssueRequest)
    case addAsset(AddAssetRequest)
    case addAssets(AddAssetsRequest)
    case download(AssetCommand)
    case resume(AssetCommand)
    case pause(AssetCommand)
    case cancel(AssetCommand)
    case ack(AssetCommand)
    case status(StatusRequest)
    case subscribe(PlainRequest)
    case reload(PlainRequest)
    case shelf(ShelfRequest)
    case assets(AssetsRequest)
    case states(StatesRequest)
    case read(ReadRequest)
    case purge(PurgeRequest)
    case notify(NotifyRequest)
    case answer(AnswerRequest)
    case remove(IssueCommand)
    case markRead(IssueCommand)
    case wait(WaitRequest)
    case checksum(ChecksumRequest)
    case resumeWith(ResumeWithRequest)
    case counts(CountsRequest)
    case activity(PlainRequest)

    /// Decodes a request's payload by its kind.
    ///
    /// - Throws: ``WireError`` `bad-request` naming the kind, the field and the value
    ///   (``DaemonProtocol/decode(_:_:)``), or `unknown-kind`.
    package init(_ frame: CheckedFrame) throws(WireError) {
        typealias Kind = DaemonProtocol.Kind
        func read<Payload: Decodable>(_ type: Payload.Type) throws(WireError) -> Payload { try DaemonProtocol.decode(type, frame) }
        switch frame.kind {
        case Kind.hello: self = .hello(try read(ClientHello.self))
        case Kind.addIssue: self = .addIssue(try read(AddIssueRequest.self))
        case Kind.addAsset: self = .addAsset(try read(AddAssetRequest.self))
        case Kind.addAssets: self = .addAssets(try read(AddAssetsRequest.self))
        case Kind.download: self = .download(try read(AssetCommand.self))
        case Kind.resume: self = .resume(try read(AssetCommand.self))
        case Kind.pause: self = .pause(try read(AssetCommand.self))
        case Kind.cancel: self = .cancel(try read(AssetCommand.self))
        case Kind.ack: self = .ack(try read(AssetCommand.self))
        case Kind.status: self = .status(try read(StatusRequest.self))
        case Kind.subscribe: self = .subscribe(try read(PlainRequest.self))
        case Kind.reload: self = .reload(try read(PlainRequest.self))
        case Kind.shelf: self = .shelf(try read(ShelfRequest.self))
        case Kind.assets: self = .assets(try read(AssetsRequest.self))
        case Kind.states: self = .states(try read(StatesRequest.self))
        case Kind.read: self = .read(try read(ReadRequest.self))
        case Kind.purge: self = .purge(try read(PurgeRequest.self))
        case Kind.notify: self = .notify(try read(NotifyRequest.self))
        case Kind.answer: self = .answer(try read(AnswerRequest.self))
        case Kind.remove: self = .remove(try read(IssueCommand.self))
        case Kind.markRead: self = .markRead(try read(IssueCommand.self))
        case Kind.wait: self = .wait(try read(WaitRequest.self))
        case Kind.checksum: self = .checksum(try read(ChecksumRequest.self))
        case Kind.resumeWith: self = .resumeWith(try read(ResumeWithRequest.self))
        case Kind.counts: self = .counts(try read(CountsRequest.self))
        case Kind.activity: self = .activity(try read(PlainRequest.self))
        default: throw WireError(DaemonProtocol.ErrorCode.unknownKind, "unknown message kind \(frame.kind)")
        }
    }

    /// The frame's kind.
    package var kind: String {
        typealias Kind = DaemonProtocol.Kind
        return switch self {
        case .hello: Kind.hello
        case .addIssue: Kind.addIssue
        case .addAsset: Kind.addAsset
        case .addAssets: Kind.addAssets
        case .download: Kind.download
        case .resume: Kind.resume
        case .pause: Kind.pause
        case .cancel: Kind.cancel
        case .ack: Kind.ack
        case .status: Kind.status
        case .subscribe: Kind.subscribe
        case .reload: Kind.reload
        case .shelf: Kind.shelf
        case .assets: Kind.assets
        case .states: Kind.states
        case .read: Kind.read
        case .purge: Kind.purge
        case .notify: Kind.notify
        case .answer: Kind.answer
        case .remove: Kind.remove
        case .markRead: Kind.markRead
        case .wait: Kind.wait
        case .checksum: Kind.checksum
        case .resumeWith: Kind.resumeWith
        case .counts: Kind.counts
        case .activity: Kind.activity
        }
    }

    /// The payload, for encoding.
    package var payload: any Encodable & Sendable {
        switch self {
        case .hello(let payload): payload
        case .addIssue(let payload): payload
        case .addAsset(let payload): payload
        case .addAssets(let payload): payload
        case .download(let payload), .resume(let payload), .pause(let payload), .cancel(let payload), .ack(let payload): payload
        case .status(let payload): payload
        case .subscribe(let payload), .reload(let payload), .activity(let payload): payload
        case .shelf(let payload): payload
        case .assets(let payload), .states(let payload): payload
        case .read(let payload): payload
        case .purge(let payload): payload
        case .notify(let payload): payload
        case .answer(let payload): payload
        case .remove(let payload), .markRead(let payload): payload
        case .wait(let payload): payload
        case .checksum(let payload): payload
        case .resumeWith(let payload): payload
        case .counts(let payload): payload
        }
    }

    /// The request as a frame.
    package var frame: Data { DaemonProtocol.frame(kind, payload) }
}
