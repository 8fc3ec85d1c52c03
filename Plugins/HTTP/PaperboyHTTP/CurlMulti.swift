import CPaperboyCurl
import CPaperboySystem
import Foundation
import Paperboy
import Synchronization

/// A libcurl easy handle (`CURL *`), typed so it cannot be confused with a multi handle.
struct EasyHandle: Hashable, @unchecked Sendable {
    let raw: UnsafeMutableRawPointer
}

/// One libcurl multi handle driven by one dedicated thread, shared by every HTTP transfer.
///
/// One thread owns the multi handle and every easy handle added to it: requests are built on
/// the caller's thread, then handed over through the command queue, and never touched by the
/// caller again. Other threads only append commands and wake the thread with
/// `curl_multi_wakeup` (the one call libcurl allows from any thread). Connections, TLS
/// sessions and DNS answers are cached in the multi handle, so consecutive assets from one
/// host reuse a connection, and HTTP/2 streams to one host are multiplexed.
final class CurlMulti: @unchecked Sendable {
    /// The engine every ``HTTPTransport`` uses; its thread starts on first use and lives as long
    /// as the process.
    static let shared = CurlMulti()

    private enum Command {
        case add(CurlRequest)
        case cancel(CurlRequest)
        case unpause(CurlRequest)
    }

    private let multi: UnsafeMutableRawPointer
    private let commands = Mutex<[Command]>([])
    /// Whether the curl thread is waiting (or about to) in `curl_multi_poll`.
    private let polling = Atomic<Bool>(false)
    /// Requests in the multi handle, by easy handle. Curl thread only.
    private var active: [EasyHandle: CurlRequest] = [:]
    /// When the curl thread next looks for stalled requests. Curl thread only.
    private var nextStallCheck = ContinuousClock.now
    /// How often it looks (the thread wakes at least once a second while requests run, see `run`).
    private static let stallCheckInterval: Duration = .milliseconds(250)

    /// Whether this libcurl speaks HTTP/2.
    static let supportsHTTP2 = paperboy_curl_supports_http2() != 0
    /// libcurl's version, such as `7.88.1`.
    static let version = String(cString: paperboy_curl_version())

    /// An engine of its own (``HTTPTransport/withAnEngineOfItsOwn(configuration:)``); otherwise ``shared``.
    init() {
        // libcurl 7.88 gives every easy handle its own receive buffer (512 KiB, see
        // ``HTTPTransport/Configuration/bufferSize``), allocated and freed once per request: the
        // recycling allocator keeps a few freed ones resident for the next requests, instead of
        // glibc handing them back and the next request faulting their pages in again. An app
        // that initialised libcurl first keeps its own allocator (libcurl then ignores these).
        curl_global_init_mem(
            PAPERBOY_CURL_GLOBAL_DEFAULT, paperboy_recycling_malloc, paperboy_recycling_free,
            paperboy_recycling_realloc, paperboy_recycling_strdup, paperboy_recycling_calloc)
        guard let multi = curl_multi_init() else { fatalError("curl_multi_init failed (out of memory)") }
        self.multi = multi
        _ = paperboy_multi_setopt_long(multi, CURLMOPT_PIPELINING, PAPERBOY_CURLPIPE_MULTIPLEX)
        // Idle connections kept for reuse across assets.
        _ = paperboy_multi_setopt_long(multi, CURLMOPT_MAXCONNECTS, 64)
        let thread = Thread { [self] in run() }
        thread.name = "paperboy-curl"
        thread.start()
    }

    /// Runs `request` to its end: its outcome, or `CancellationError` when the task is cancelled.
    func perform(_ request: CurlRequest) async throws -> CurlOutcome {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<CurlOutcome, any Error>) in
                request.continuation = continuation
                submit(.add(request))
            }
        } onCancel: {
            submit(.cancel(request))
        }
    }

    /// Asks the curl thread to continue a request paused by back-pressure.
    func unpause(_ request: CurlRequest) {
        submit(.unpause(request))
    }

    private func submit(_ command: Command) {
        commands.withLock { $0.append(command) }
        // Only a waiting thread needs waking: a running one reads the queue before it waits
        // (one system call and one wake-up fewer per asset when transfers follow each other).
        if polling.load(ordering: .sequentiallyConsistent) { curl_multi_wakeup(multi) }
    }

    // MARK: The curl thread

    private func run() {
        paperboy_name_thread("paperboy-curl")
        var running: Int32 = 0
        while true {
            let pending = commands.withLock { queue -> [Command] in
                defer { queue.removeAll(keepingCapacity: true) }
                return queue
            }
            for command in pending { execute(command) }
            let performStart = ContinuousClock.now
            curl_multi_perform(multi, &running)
            collectFinished()
            endStalled(performStart: performStart)
            // Announced before the queue is checked, so that a command added after the check
            // sees it and wakes the thread (see `submit`).
            polling.store(true, ordering: .sequentiallyConsistent)
            if commands.withLock({ $0.isEmpty }) {
                // Returns early on socket activity, curl's own timers, or curl_multi_wakeup.
                // With nothing to watch for stalls, an idle process (the daemon) sleeps.
                curl_multi_poll(multi, nil, 0, active.isEmpty ? 60_000 : 1000, nil)
            }
            polling.store(false, ordering: .sequentiallyConsistent)
        }
    }

    private func execute(_ command: Command) {
        switch command {
        case .add(let request):
            if request.isCancelled {
                request.finish(cancelled: true)
                return
            }
            let code = curl_multi_add_handle(multi, request.easy.raw)
            guard code == CURLM_OK else {
                request.finish(failure: TransportError(
                    .ioError, "libcurl refused the transfer: \(String(cString: curl_multi_strerror(code)))",
                    url: request.url, isRetryable: true))
                return
            }
            active[request.easy] = request
            request.startIdleClock(at: .now)
        case .cancel(let request):
            request.isCancelled = true
            if active.removeValue(forKey: request.easy) != nil {
                curl_multi_remove_handle(multi, request.easy.raw)
                request.finish(cancelled: true)
            } else {
                request.cancelDrain()
            }
        case .unpause(let request):
            guard active[request.easy] === request, request.isPaused else { return }
            request.isPaused = false
            request.activity &+= 1
            // May call the write callback at once with the bytes curl kept while paused.
            curl_easy_pause(request.easy.raw, PAPERBOY_CURLPAUSE_CONT)
        }
    }

    /// Ends the requests whose source sent nothing for their idle timeout, after a
    /// `curl_multi_perform` that started at `performStart`.
    private func endStalled(performStart: ContinuousClock.Instant) {
        let now = ContinuousClock.now
        guard now >= nextStallCheck, !active.isEmpty else { return }
        nextStallCheck = now + Self.stallCheckInterval
        let stalled = active.filter { $0.value.isStalled(performStart: performStart, now: now) }
        for (easy, request) in stalled {
            active[easy] = nil
            curl_multi_remove_handle(multi, easy.raw)
            request.finishStalled()
        }
    }

    private func collectFinished() {
        var left: Int32 = 0
        while let message = curl_multi_info_read(multi, &left) {
            guard message.pointee.msg == CURLMSG_DONE, let raw = message.pointee.easy_handle else { continue }
            let result = paperboy_message_result(message)
            let easy = EasyHandle(raw: raw)
            guard let request = active.removeValue(forKey: easy) else { continue }
            curl_multi_remove_handle(multi, raw)
            request.finish(result: result)
        }
    }
}
