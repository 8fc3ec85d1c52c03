import Foundation
import Paperboy
import Synchronization

/// A scriptable transport serving bytes from memory, for scheduler and delivery tests.
///
/// URLs look like `mem://HOST/NAME`. Each resource has bytes, a validator, and optionally a
/// script of behaviours for successive attempts (fail with an error, stall, serve).
public final class InMemoryTransport: Transport, Sendable {
    /// What one attempt does.
    public enum Step: Sendable {
        /// Serve normally (honouring the offset when the validator matches).
        case serve
        /// Throw this error before any byte.
        case fail(TransportError)
        /// Send this many bytes, then throw this error.
        case failAfter(Int, TransportError)
        /// Serve from byte 0 even when asked to resume (a server ignoring Range).
        case ignoreRange
        /// Send this many bytes, then wait until cancelled.
        case stallAfter(Int)
    }

    private struct Resource {
        var data: Data
        var validator: ResourceValidator?
        var script: [Step]
    }

    private struct State {
        var resources: [String: Resource] = [:]
        var running: [String: Int] = [:]
        var maxRunning: [String: Int] = [:]
        var maxRunningTotal = 0
        var runningTotal = 0
        var jobs: [TransferJob] = []
    }

    private let state = Mutex<State>(State())
    /// Broadcast when a job arrives, for ``blockUntilJobs(_:timeout:)``.
    private let jobArrived = NSCondition()
    /// Bytes per `write` call.
    public let chunkSize: Int
    /// Delay before each chunk (makes transfers overlap in concurrency tests).
    public let chunkDelay: Duration?
    /// Where the chunk delay is waited: a ``TestClock`` makes each chunk the test's to time.
    public let clock: any LibraryClock

    /// Creates an empty transport.
    public init(chunkSize: Int = 64 * 1024, chunkDelay: Duration? = nil, clock: any LibraryClock = SystemClock()) {
        self.chunkSize = chunkSize
        self.chunkDelay = chunkDelay
        self.clock = clock
    }

    public var schemes: Set<String> { ["mem"] }
    public var capabilities: TransportCapabilities { [.resume, .validators, .challenges] }

    /// Makes `data` available at `mem://host/name`, returning that URL.
    @discardableResult
    public func serve(_ data: Data, at name: String, host: String = "example", validator: String? = "v1", script: [Step] = []) -> URL {
        let url = URL(string: "mem://\(host)/\(name)")!
        state.withLock {
            $0.resources[url.absoluteString] = Resource(
                data: data, validator: validator.map { ResourceValidator($0, strength: .strong) }, script: script)
        }
        return url
    }

    /// Replaces the bytes (and validator) of a resource, as a publisher updating a file would.
    public func replace(_ url: URL, with data: Data, validator: String?) {
        state.withLock {
            $0.resources[url.absoluteString]?.data = data
            $0.resources[url.absoluteString]?.validator = validator.map { ResourceValidator($0, strength: .strong) }
        }
    }

    /// Every job received, in order.
    public var jobs: [TransferJob] { state.withLock { $0.jobs } }

    /// Blocks the calling thread until `count` jobs have arrived, or `timeout` passes: for code
    /// that must wait synchronously (a hook on the library's durability queue), never for a
    /// thread of the cooperative pool. Returns whether they arrived.
    public func blockUntilJobs(_ count: Int, timeout: Duration) -> Bool {
        let deadline = Date(timeIntervalSinceNow: Double(timeout.components.seconds) + Double(timeout.components.attoseconds) / 1e18)
        jobArrived.lock()
        defer { jobArrived.unlock() }
        while jobs.count < count {
            guard jobArrived.wait(until: deadline) else { return jobs.count >= count }
        }
        return true
    }

    /// The most transfers seen running at once against `host`.
    public func maxConcurrent(host: String) -> Int { state.withLock { $0.maxRunning[host] ?? 0 } }

    /// The most transfers seen running at once, all hosts together.
    public var maxConcurrentTotal: Int { state.withLock { $0.maxRunningTotal } }

    public func transfer(_ job: TransferJob, into sink: any TransferSink) async throws {
        let host = job.url.host ?? ""
        let (resource, step) = state.withLock { state -> (Resource?, Step) in
            state.jobs.append(job)
            state.running[host, default: 0] += 1
            state.runningTotal += 1
            state.maxRunning[host] = max(state.maxRunning[host] ?? 0, state.running[host]!)
            state.maxRunningTotal = max(state.maxRunningTotal, state.runningTotal)
            let key = job.url.absoluteString
            guard var resource = state.resources[key] else { return (nil, .serve) }
            let step = resource.script.isEmpty ? Step.serve : resource.script.removeFirst()
            state.resources[key] = resource
            return (resource, step)
        }
        jobArrived.withLock { jobArrived.broadcast() }
        defer {
            state.withLock { state in
                state.running[host, default: 1] -= 1
                state.runningTotal -= 1
            }
        }
        guard let resource else {
            throw TransportError(.notFound, "no such resource", url: job.url, isRetryable: false)
        }
        if case .fail(let error) = step { throw error }

        var offset = job.offset
        if case .ignoreRange = step { offset = 0 }
        if offset > 0, let wanted = job.validator, wanted != resource.validator { offset = 0 }
        if offset > Int64(resource.data.count) { offset = 0 }
        try sink.begin(TransferResponse(offset: offset, expectedLength: Int64(resource.data.count), validator: resource.validator))

        var position = Int(offset)
        var sent = 0
        while position < resource.data.count {
            try Task.checkCancellation()
            if let chunkDelay { try await clock.sleep(for: chunkDelay) }
            switch step {
            case .failAfter(let limit, let error) where sent >= limit:
                throw error
            case .stallAfter(let limit) where sent >= limit:
                while true { try await Task.sleep(for: .seconds(3600)) }
            default:
                break
            }
            var end = min(position + chunkSize, resource.data.count)
            switch step {
            case .failAfter(let limit, _), .stallAfter(let limit):
                end = min(end, position + max(1, limit - sent))
            default:
                break
            }
            try await sink.write(resource.data[position..<end])
            sent += end - position
            position = end
        }
    }
}
