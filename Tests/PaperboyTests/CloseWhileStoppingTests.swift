import Foundation
import Synchronization
import Testing
@testable import Paperboy
import PaperboyTesting

/// A pause or a cancel whose transfer is still stopping when the library closes ends as a pause
/// or a cancel, not as a transfer to continue at the next open.
@Suite("Closing while a pause or a cancel stops the transfer", .timeLimit(.minutes(2)))
struct CloseWhileStoppingTests {
    /// Writes its bytes, then stops only when the test says (a transport slow to stop), whatever
    /// cancelled it.
    final class SlowToStop: Transport, Sendable {
        let data: Data
        private let state = Mutex<(held: CheckedContinuation<Void, Never>?, released: Bool, calls: Int)>((nil, false, 0))

        init(_ data: Data) { self.data = data }

        var schemes: Set<String> { ["slow"] }
        var capabilities: TransportCapabilities { [.resume] }
        var isHeld: Bool { state.withLock { $0.held != nil } }
        var calls: Int { state.withLock { $0.calls } }

        func transfer(_ job: TransferJob, into sink: any TransferSink) async throws {
            state.withLock { $0.calls += 1 }
            try sink.begin(TransferResponse(offset: job.offset, expectedLength: Int64(data.count), validator: ResourceValidator("v1", strength: .strong)))
            try await sink.write(data[Int(job.offset)..<data.count / 2])
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let released = state.withLock { state -> Bool in
                    if !state.released { state.held = continuation }
                    return state.released
                }
                if released { continuation.resume() }
            }
            throw CancellationError()
        }

        func release() {
            state.withLock { state in
                state.released = true
                return state.held.take()
            }?.resume()
        }
    }

    @Test(arguments: [true, false])
    func theReopenedLibraryFindsWhatWasAskedFor(pausing: Bool) async throws {
        let folder = TempFolder()
        let transport = SlowToStop(randomData(256 * 1024))
        let open = { try Library.open(at: folder.file("library"), transports: TransportRegistry([transport]), configuration: .forTests(attempts: 1)) }
        let library = try open()
        let asset = try await library.addIssue(name: "i", date: Date()).addAsset(AssetRequest(url: URL(string: "slow://host/a.bin")!))
        try await asset.download()
        try await eventually("the transfer to hold", seen: "\(asset.state)") { transport.isHeld }
        if pausing { try await asset.pause() } else { try await asset.cancel() }
        // Closing while the transfer is still stopping.
        let closing = Task { await library.close() }
        try await eventually("the library to close") { library.scheduler.state.withLock { $0.closed } }
        transport.release()
        await closing.value
        let reopened = try open()
        let status = try await reopened.asset(identifier: asset.identifier)?.status()
        if pausing {
            #expect(status?.state == .waiting(.pausedByApp) && status?.totalBytesWritten == Int64(transport.data.count / 2),
                    "\(String(describing: status))")
        } else {
            #expect(status?.state == .cancelled && status?.totalBytesWritten == 0, "\(String(describing: status))")
        }
        #expect(transport.calls == 1, "not continued at the open")
        await reopened.close()
    }
}
