import BehaviourLives
import Foundation
import Paperboy
import PaperboyFile
import PaperboyHTTP
import PaperboyTestServers
import PaperboyTesting
import Synchronization
import Testing

/// A scenario's world: a temporary folder, the transports a daemon can serve as well (the
/// in-memory one, `file:`, HTTP on loopback), and the backend under test.
struct BehaviourHome: Sendable {
    let backend: any BackendFactory
    let folder = TempFolder(prefix: "pbb")
    /// The scenario's scriptable source (`mem://example/NAME`).
    let memory: InMemoryTransport

    /// - Parameters:
    ///   - chunkSize, chunkDelay, clock: the in-memory transport's (a ``TestClock`` with a chunk
    ///     delay makes each chunk the scenario's to time).
    init(_ backend: any BackendFactory, chunkSize: Int = 64 * 1024, chunkDelay: Duration? = nil, clock: any LibraryClock = SystemClock()) {
        self.backend = backend
        memory = InMemoryTransport(chunkSize: chunkSize, chunkDelay: chunkDelay, clock: clock)
    }

    var transports: TransportRegistry { TransportRegistry([memory, FileTransport(), .http()]) }
    var libraryFolder: URL { folder.file("library") }

    /// The configuration scenarios use: `attempts` attempts, progress every 20 ms of `clock`.
    static func configuration(attempts: Int, clock: any LibraryClock) -> Library.Configuration {
        Library.Configuration.forTests(attempts: attempts, clock: clock)
    }

    /// Opens the library through the backend.
    func open(attempts: Int = 1, clock: any LibraryClock = SystemClock(),
              _ configure: (inout Library.Configuration) -> Void = { _ in }) async throws -> BackendSession {
        var configuration = Self.configuration(attempts: attempts, clock: clock)
        configure(&configuration)
        return try await backend.open(folder: libraryFolder, transports: transports, configuration: configuration)
    }

    /// Opens the library, runs `body`, and closes the library, also when `body` throws.
    func with<T>(attempts: Int = 1, clock: any LibraryClock = SystemClock(),
                 _ configure: (inout Library.Configuration) -> Void = { _ in },
                 _ body: (Library) async throws -> T) async throws -> T {
        let session = try await open(attempts: attempts, clock: clock, configure)
        do {
            let result = try await body(session.library)
            await session.close()
            return result
        } catch {
            await session.close()
            throw error
        }
    }

    /// Lives `life` in a process killed at its kill point, then serves the library again.
    func relaunched(after life: FirstLife) async throws -> BackendSession {
        try await backend.relaunch(folder: libraryFolder, after: life, transports: transports,
                                   configuration: Self.configuration(attempts: 1, clock: SystemClock()))
    }

    /// Lives `life` in a process killed at its kill point, serves the library again, runs `body`
    /// on it, and closes it, also when `body` throws.
    func withRelaunched<T>(after life: FirstLife, _ body: (Library) async throws -> T) async throws -> T {
        let session = try await relaunched(after: life)
        do {
            let result = try await body(session.library)
            await session.close()
            return result
        } catch {
            await session.close()
            throw error
        }
    }

    /// A file under the scenario's folder holding `data`, as a `file:` URL.
    func file(_ name: String, _ data: Data) throws -> URL {
        let url = folder.file(name)
        try data.write(to: url)
        return url
    }
}

/// A library's events, collected as they come (``Library/events()``).
final class LibraryEventLog: Sendable {
    private final class Record: Sendable {
        let events = Mutex<[LibraryEvent]>([])
    }

    private let record = Record()
    private let task: Task<Void, Never>

    /// Subscribes to `library`'s events from now on.
    init(_ library: Library) async throws {
        let stream = try await library.events()
        task = Task { [record] in
            for await event in stream { record.events.withLock { $0.append(event) } }
        }
    }

    deinit { task.cancel() }

    var all: [LibraryEvent] { record.events.withLock { $0 } }

    /// The states `asset` was told in, in order.
    func states(of asset: AssetDownload) -> [AssetState] {
        all.compactMap { event in
            guard case .assetStateChanged(let changed, let state) = event, changed == asset else { return nil }
            return state
        }
    }

    /// The issues told complete, in order.
    var completedIssues: [String] {
        all.compactMap { event in
            guard case .issueDownloadCompleted(let issue) = event else { return nil }
            return issue.name
        }
    }

    /// Waits until `asset` was told in a state `matching`.
    func waitForState(of asset: AssetDownload, _ what: String, matching: @escaping (AssetState) -> Bool) async throws {
        try await eventually("\(asset) to be told \(what)", seen: "\(states(of: asset))") { states(of: asset).contains(where: matching) }
    }
}

extension AssetDownload {
    /// Waits until the asset's status (read through the shared API) satisfies `condition`.
    func waitForStatus(_ what: String, _ condition: @escaping (AssetStatus) -> Bool) async throws {
        var seen: AssetStatus?
        try await eventually("\(self) to be \(what)", seen: "\(seen.map { "\($0.state), \($0.totalBytesWritten) bytes" } ?? "nothing")") {
            seen = try await status()
            return condition(seen!)
        }
    }
}

extension RecordingDelegate {
    /// The totals of the progress calls, in order.
    var progressTotals: [Int64] {
        events.compactMap { if case .progress(_, let total, _) = $0 { total } else { nil } }
    }

    /// Expects one progress call per total of `each`, in order. With `mergeable` (through a
    /// daemon), reports of one asset that wait in the connection's queue together are one report
    /// with their bytes summed (docs/Daemon.md, `progress`): a loaded machine may merge some,
    /// never lose their bytes, reorder them or skip the last.
    func expectProgress(_ each: [Int64], mergeable: Bool, sourceLocation: SourceLocation = #_sourceLocation) {
        let totals = progressTotals
        guard mergeable else {
            #expect(totals == each, "\(events)", sourceLocation: sourceLocation)
            return
        }
        #expect(totals.last == each.last && totals.allSatisfy(each.contains), "\(events)", sourceLocation: sourceLocation)
        #expect(zip(totals, totals.dropFirst()).allSatisfy { $0 < $1 }, "\(events)", sourceLocation: sourceLocation)
        let told = events.reduce(Int64(0)) { sum, event in
            if case .progress(let bytes, _, _) = event { sum + bytes } else { sum }
        }
        #expect(told == each.last, "\(events)", sourceLocation: sourceLocation)
    }

    /// How many calls ended the download (`didFinish` and `didFail` together).
    var endings: Int {
        events.filter { event in
            switch event {
            case .finished, .failed: true
            default: false
            }
        }.count
    }
}

extension TestClock {
    /// Moves the clock past the delay before each of `chunks` chunks of an in-memory transport
    /// whose chunk delay is `delay` (the library's progress interval in scenarios), one at a
    /// time: each sleep of the transport is awaited, whatever else sleeps on the clock (the
    /// library's statistics recorder).
    func passChunks(_ chunks: Int, delay: Duration = .milliseconds(20)) async throws {
        for _ in 0..<chunks {
            _ = try await waitForSleep(of: delay)
            advance(by: delay)
        }
    }

    /// Moves the clock a second at a time until `condition` holds (a retry timed with jitter).
    func advance(until what: String, _ condition: @escaping () async throws -> Bool) async throws {
        try await eventually(what) {
            advance(by: .seconds(1))
            return try await condition()
        }
    }
}

/// The bytes a scenario downloads.
func payload(_ count: Int = 300_000, seed: UInt64 = 1) async throws -> Data {
    try await generated(count, seed: seed)
}
