import Foundation
import Synchronization
import Testing
@testable import Paperboy
import PaperboyTesting

/// The states told of one asset come in the order they were read: a telling held up between its
/// read and its send (a preempted thread) is not overtaken by a later state of the same asset.
@Suite("Telling order", .timeLimit(.minutes(2)))
struct TellingOrderTests {
    @Test func aStateReadFirstIsToldFirstThoughItsSendIsHeldUp() async throws {
        let folder = TempFolder()
        let transport = InMemoryTransport()
        let url = transport.serve(Data("bytes".utf8), at: "a")
        // Not allowed in the background on an expensive network: `download()` tells `waiting`.
        let monitor = FixedNetworkMonitor(NetworkStatus(kind: .cellular, isExpensive: true))
        var configuration = Library.Configuration.forTests()
        configuration.mode = .background
        configuration.networkMonitor = monitor
        let library = try Library.open(at: folder.file("lib"), transports: TransportRegistry([transport]), configuration: configuration)
        let asset = try await library.addIssue(name: "i", date: Date()).addAsset(AssetRequest(url: url, destinationPath: "a"))
        let scheduler = library.scheduler
        let id = asset.identifier

        // Holds the first `waiting` told of the asset inside its send (the subscriber's filter runs
        // on the telling thread, after the read), until either a later state of the asset got
        // through (the order is broken) or another telling of the asset waits behind it.
        let gate = Mutex<(holding: Bool, held: Bool, laterSeen: Bool)>((false, false, false))
        let told = Mutex<[AssetState]>([])
        let events = try await library.events { event in
            guard case .assetStateChanged(let changed, let state) = event, changed.identifier == id else { return false }
            told.withLock { $0.append(state) }
            let hold = gate.withLock { gate -> Bool in
                if state.name != "waiting" { gate.laterSeen = true }
                guard state.name == "waiting", !gate.held else { return false }
                gate.held = true
                gate.holding = true
                return true
            }
            guard hold else { return true }
            // A wait for a condition (polled: the other thread gives no signal), not a timed guess.
            let giveUp = ContinuousClock.now + .seconds(60)
            while !gate.withLock({ $0.laterSeen }), scheduler.tellingOrder.waiters(for: id) == 0, ContinuousClock.now < giveUp {
                usleep(200)
            }
            gate.withLock { $0.holding = false }
            return true
        }
        let delivered = Task {
            var states: [AssetState] = []
            for await event in events {
                guard case .assetStateChanged(_, let state) = event else { continue }
                states.append(state)
                if state == .delivered { break }
            }
            return states
        }

        // The command tells `waiting` from a thread of its own (not the cooperative pool, which
        // the transfer needs), and is held there.
        let command = Thread { scheduler.download(asset, delegate: nil) }
        command.start()
        try await eventually("the command's 'waiting' held in its send", seen: "\(told.withLock { $0 })") { gate.withLock { $0.holding } }
        // The network now allows it: the transfer starts and tells `downloading`, then the rest.
        monitor.set(NetworkStatus(kind: .wired))
        let states = await delivered.value
        let lastWaiting = try #require(states.lastIndex { $0.name == "waiting" }, "\(states)")
        let firstDownloading = try #require(states.firstIndex(of: .downloading), "\(states)")
        #expect(lastWaiting < firstDownloading, "told \(states)")
        #expect(states.last == .delivered, "told \(states)")
        await library.close()
    }
}
