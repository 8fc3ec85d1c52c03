import Foundation
import FuzzSupport
@testable import Paperboy
@testable import PaperboyDaemon
@testable import PaperboyWire
import PaperboyFraming

/// Daemon requests: a client's frame checked by the bounded reader (`DaemonProtocol.request`) and
/// decoded into its message, on a thread with the stack of the daemon's connection readers, as
/// `DaemonServer` does.
/// The first byte of the input chooses the kind (`A` the first of `requests`), the rest is the payload.
///
/// Promise: every payload is decoded or refused with a `bad-request` `WireError`; nothing traps
/// or overflows the reader's stack.
@main
enum FuzzDaemon {
    static func main() { Fuzzer.main(fuzz) }
}

typealias Kind = DaemonProtocol.Kind

/// Each request kind a client may send, with the message the daemon decodes it into.
let requests: [(kind: String, decode: @Sendable (CheckedFrame) throws(WireError) -> Void)] = [
    (Kind.hello, { frame throws(WireError) in _ = try DaemonProtocol.decode(ClientHello.self, frame) }),
    (Kind.addIssue, { frame throws(WireError) in _ = try DaemonProtocol.decode(AddIssueRequest.self, frame) }),
    (Kind.addAsset, { frame throws(WireError) in _ = try DaemonProtocol.decode(AddAssetRequest.self, frame) }),
    (Kind.download, { frame throws(WireError) in _ = try DaemonProtocol.decode(AssetCommand.self, frame) }),
    (Kind.ack, { frame throws(WireError) in _ = try DaemonProtocol.decode(AssetCommand.self, frame) }),
    (Kind.status, { frame throws(WireError) in _ = try DaemonProtocol.decode(StatusRequest.self, frame) }),
    (Kind.subscribe, { frame throws(WireError) in _ = try DaemonProtocol.decode(PlainRequest.self, frame) }),
    (Kind.notify, { frame throws(WireError) in _ = try DaemonProtocol.decode(NotifyRequest.self, frame) }),
    (Kind.answer, { frame throws(WireError) in _ = try DaemonProtocol.decode(AnswerRequest.self, frame) }),
    (Kind.shelf, { frame throws(WireError) in _ = try DaemonProtocol.decode(ShelfRequest.self, frame) }),
    (Kind.assets, { frame throws(WireError) in _ = try DaemonProtocol.decode(AssetsRequest.self, frame) }),
    (Kind.read, { frame throws(WireError) in _ = try DaemonProtocol.decode(ReadRequest.self, frame) }),
    (Kind.purge, { frame throws(WireError) in _ = try DaemonProtocol.decode(PurgeRequest.self, frame) }),
    (Kind.addAssets, { frame throws(WireError) in _ = try DaemonProtocol.decode(AddAssetsRequest.self, frame) }),
    (Kind.states, { frame throws(WireError) in _ = try DaemonProtocol.decode(StatesRequest.self, frame) }),
]

@_cdecl("LLVMFuzzerTestOneInput")
func fuzz(_ bytes: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    let input = Fuzzer.data(bytes, count)
    guard let first = input.first else { return 0 }
    // The seeds of Fuzz/Corpus/daemon start with "A" plus the kind's index in `requests`.
    let request = requests[Int(first &- UInt8(ascii: "A")) % requests.count]
    let frame = Frame(kind: request.kind, payload: Data(input.dropFirst()))
    Fuzzer.onThread(stackSize: DaemonProtocol.jsonLimits.threadStackSize) {
        do {
            // As the daemon does: the bounded reader first, then the request's id, then its message.
            let checked = try DaemonProtocol.request(frame)
            _ = DaemonProtocol.readableID(checked)
            try DaemonProtocol.checkID(checked)
            try request.decode(checked)
        } catch let error as WireError {
            Fuzzer.expect(error.code == DaemonProtocol.ErrorCode.badRequest, "\(request.kind) refused with \(error.code)")
        } catch {
            Fuzzer.expect(false, "\(request.kind) refused with \(error)")
        }
    }
    return 0
}
