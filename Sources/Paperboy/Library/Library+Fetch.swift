import Foundation
import Synchronization

extension Library {
    /// Fetches a small resource (a publisher's catalog, say) into memory through the library's
    /// transports, answering challenges from the configured credentials.
    ///
    /// - Parameters:
    ///   - url: the resource; plain paths are local files.
    ///   - maxBytes: the largest size accepted (4 MiB by default).
    ///   - options: transport options, as for an asset (a CA file, say).
    /// - Throws: ``LibraryError`` wrapping the transport's error, or `.invalidRequest` when the
    ///   resource is larger than `maxBytes`; `.invalidRequest` through a daemon (use
    ///   ``fetchData(from:transports:configuration:maxBytes:options:)`` there).
    public func fetchData(from url: URL, maxBytes: Int = 4 << 20, options: [String: String] = [:]) async throws(LibraryError) -> Data {
        guard let scheduler = local?.scheduler else { throw LibraryError.inProcessOnly("Library.fetchData(from:)") }
        return try await Self.fetchData(from: url, transports: scheduler.transports, configuration: scheduler.settings,
                                        maxBytes: maxBytes, options: options)
    }

    /// Fetches a small resource as ``fetchData(from:maxBytes:options:)`` does, without an open
    /// library: through `transports`, with `configuration`'s credentials, retries and timeouts
    /// (a command whose library a daemon holds reads its feeds' catalogs so).
    public static func fetchData(from url: URL, transports: TransportRegistry, configuration: Configuration,
                                 maxBytes: Int = 4 << 20, options: [String: String] = [:]) async throws(LibraryError) -> Data {
        let transport: any Transport
        do {
            transport = try transports.transport(for: url)
        } catch {
            throw Scheduler.libraryError(error)
        }
        let sink = MemorySink(url: url, maxBytes: maxBytes, credentials: configuration.credentials)
        let retry = configuration.retry
        var lastError: (any Error)?
        for attempt in 1...max(1, retry.maxAttempts) {
            do {
                let challenges = ChallengeBudget(url: url)
                sink.reset(challenges: challenges)
                let job = TransferJob(url: url, connectTimeout: configuration.connectTimeout, idleTimeout: configuration.idleTimeout,
                                      options: options)
                try await challenges.run { try await transport.transfer(job, into: sink) }
                return sink.data
            } catch let error as TransportError where error.isRetryable && attempt < retry.maxAttempts {
                lastError = error
                let delay = retry.delay(afterFailedAttempts: attempt, retryAfter: error.retryAfter, random: configuration.retryJitter)
                do { try await configuration.clock.sleep(for: delay) } catch { throw LibraryError(.cancelled, "fetching \(url.redactedString) was cancelled") }
            } catch {
                throw Scheduler.libraryError(error)
            }
        }
        throw Scheduler.libraryError(lastError ?? TransportError(.protocolError, "no attempt made", url: url))
    }
}

/// Collects a small resource in memory.
final class MemorySink: TransferSink {
    private let state = Mutex<Data>(Data())
    private let url: URL
    private let maxBytes: Int
    private let credentials: (any CredentialProvider)?
    private let budget = Mutex<ChallengeBudget?>(nil)

    init(url: URL, maxBytes: Int, credentials: (any CredentialProvider)?) {
        self.url = url
        self.maxBytes = maxBytes
        self.credentials = credentials
    }

    var data: Data { state.withLock { $0 } }

    /// Starts an attempt: no bytes, and `challenges` counting its challenges.
    func reset(challenges: ChallengeBudget) {
        state.withLock { $0 = Data() }
        budget.withLock { $0 = challenges }
    }

    func begin(_ response: TransferResponse) throws {
        if let length = response.expectedLength, length > Int64(maxBytes) {
            throw LibraryError(.invalidRequest, "\(url.redactedString) is \(length) bytes; at most \(maxBytes) are accepted here")
        }
        state.withLock { $0 = Data() }
    }

    func write(_ bytes: UnsafeRawBufferPointer) async throws {
        _ = try tryWrite(bytes)
    }

    func tryWrite(_ bytes: UnsafeRawBufferPointer) throws -> Bool {
        try state.withLock { data in
            guard data.count + bytes.count <= maxBytes else {
                throw LibraryError(.invalidRequest, "\(url.redactedString) is larger than the \(maxBytes) bytes accepted here")
            }
            data.append(contentsOf: bytes)
        }
        return true
    }

    func whenWritable(_ callback: @escaping @Sendable () -> Void) { callback() }

    func challenge(_ challenge: AuthChallenge) async -> AuthChallengeDisposition {
        guard budget.withLock({ $0 })?.admit() ?? true else { return .cancelAuthenticationChallenge }
        if challenge.previousFailureCount == 0, let credential = credentials?.credential(for: challenge) {
            return .useCredential(credential)
        }
        return .performDefaultHandling
    }
}
