import Foundation
import Logging
import Paperboy
import PaperboyTesting
import Synchronization

extension TransportConformance {
    /// What happened when a resource went through a real `Library`.
    struct LibraryRun {
        /// The offset each attempt asked for.
        var offsets: [Int64] = []
        /// What each attempt's `begin` reported (nil when it did not call it).
        var responses: [TransferResponse?] = []
        /// The delivered file.
        var delivered: Data?
        /// Why the asset was not delivered.
        var failure: String?

        /// What the last attempt's `begin` reported.
        var lastResponse: TransferResponse? { responses.last ?? nil }
    }

    /// Downloads `url` through a real `Library` whose first attempt is cut after `cutAfter` bytes
    /// (a retryable drop), so the retry must continue the partial file or start it over cleanly.
    func deliverThroughLibrary(_ url: URL, data: Data, cutAfter: Int) async -> LibraryRun {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("paperboy-conformance-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let interrupting = InterruptingTransport(base: transport, cutAfter: cutAfter)
        var configuration = Library.Configuration()
        // Independent of the host's network: policies are tested on their own.
        configuration.networkMonitor = FixedNetworkMonitor(NetworkStatus(kind: .wired))
        configuration.retry = RetryPolicy(maxAttempts: 3, baseDelay: .milliseconds(10), maxDelay: .milliseconds(50))
        configuration.syncsToDisk = false
        configuration.connectTimeout = options.connectTimeout
        configuration.idleTimeout = options.idleTimeout
        var logger = Logger(label: "paperboy.conformance")
        logger.logLevel = .error
        configuration.logger = logger
        var run = LibraryRun()
        do {
            let library = try Library.open(at: root, transports: TransportRegistry([interrupting]), configuration: configuration)
            let issue = try await library.addIssue(name: "conformance", date: Date())
            let asset = try await issue.addAsset(AssetRequest(url: url, sha256: sha256Hex(data)))
            let delegate = RecordingDelegate()
            try await asset.download(delegate: delegate)
            await delegate.waitForEnd(timeout: options.transferTimeout * 2)
            await library.close()
            run.delivered = delegate.keptFiles.first
            for case .failed(let code, let message) in delegate.events {
                run.failure = "\(code): \(message)"
            }
            if run.delivered == nil, run.failure == nil { run.failure = "not delivered within \(options.transferTimeout * 2)" }
        } catch {
            run.failure = "\(error)"
        }
        run.offsets = interrupting.attempts.map(\.offset)
        run.responses = interrupting.attempts.map(\.response)
        return run
    }
}

/// Wraps the transport under test: its first attempt is cut after a number of bytes, as if the
/// connection dropped, and every attempt's job and `begin` are recorded.
final class InterruptingTransport: Transport {
    struct Attempt: Sendable {
        var offset: Int64
        var response: TransferResponse?
    }

    let base: any Transport
    let cutAfter: Int
    private let recorded = Mutex<[Attempt]>([])

    init(base: any Transport, cutAfter: Int) {
        self.base = base
        self.cutAfter = cutAfter
    }

    var attempts: [Attempt] { recorded.withLock { $0 } }
    var schemes: Set<String> { base.schemes }
    var capabilities: TransportCapabilities { base.capabilities }

    func transfer(_ job: TransferJob, into sink: any TransferSink) async throws {
        let index = recorded.withLock { attempts in
            attempts.append(Attempt(offset: job.offset))
            return attempts.count - 1
        }
        let relay = RelaySink(target: sink, cutAfter: index == 0 ? cutAfter : nil, url: job.url) { [self] response in
            recorded.withLock { $0[index].response = response }
        }
        try await base.transfer(job, into: relay)
    }
}

/// Forwards to the core's sink, and throws a retryable drop once `cutAfter` bytes went through.
final class RelaySink: TransferSink, @unchecked Sendable {
    private let target: any TransferSink
    private let cutAfter: Int?
    private let url: URL
    private let onBegin: @Sendable (TransferResponse) -> Void
    // Calls for one transfer do not overlap (the contract), so this counter needs no lock.
    private var position: Int64 = 0

    init(target: any TransferSink, cutAfter: Int?, url: URL, onBegin: @escaping @Sendable (TransferResponse) -> Void) {
        self.target = target
        self.cutAfter = cutAfter
        self.url = url
        self.onBegin = onBegin
    }

    private var drop: TransportError {
        TransportError(.connectionLost, "conformance suite: connection cut after \(cutAfter ?? 0) bytes", url: url)
    }

    func begin(_ response: TransferResponse) throws {
        onBegin(response)
        position = response.offset
        try target.begin(response)
    }

    func write(_ bytes: UnsafeRawBufferPointer) async throws {
        guard let cut = cutAfter.map(Int64.init), position + Int64(bytes.count) >= cut else {
            try await target.write(bytes)
            position += Int64(bytes.count)
            return
        }
        let keep = Int(max(0, cut - position))
        try await target.write(UnsafeRawBufferPointer(rebasing: bytes[0..<keep]))
        position += Int64(keep)
        throw drop
    }

    func tryWrite(_ bytes: UnsafeRawBufferPointer) throws -> Bool {
        guard let cut = cutAfter.map(Int64.init), position + Int64(bytes.count) >= cut else {
            guard try target.tryWrite(bytes) else { return false }
            position += Int64(bytes.count)
            return true
        }
        let keep = Int(max(0, cut - position))
        guard try target.tryWrite(UnsafeRawBufferPointer(rebasing: bytes[0..<keep])) else { return false }
        position += Int64(keep)
        throw drop
    }

    func whenWritable(_ callback: @escaping @Sendable () -> Void) { target.whenWritable(callback) }

    func challenge(_ challenge: AuthChallenge) async -> AuthChallengeDisposition { await target.challenge(challenge) }
}
