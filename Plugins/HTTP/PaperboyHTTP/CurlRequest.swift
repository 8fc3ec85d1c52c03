import CPaperboyCurl
import Foundation
import Paperboy

/// Everything one HTTP request needs, decided by ``HTTPTransport`` before it is handed to curl.
struct RequestPlan: Sendable {
    var url: URL
    /// First byte asked for with `Range` (0: the whole resource).
    var offset: Int64
    /// The end (exclusive) of the range asked for, for one piece of a split resource
    /// (``SplitDownload``); `nil` asks for everything from ``offset``.
    var rangeEnd: Int64?
    /// The `If-Range` value guarding a resume.
    var ifRange: String?
    var headers: [String: String]
    /// What answers the origin's challenge (`Authorization`).
    var originAnswer: HTTPAnswer?
    /// What answers the proxy's challenge (`Proxy-Authorization`); never the origin's answer.
    var proxyAnswer: HTTPAnswer?
    /// The proxy as written (`CURLOPT_PROXY`), `nil` for none.
    var proxy: String?
    /// Whether libcurl follows redirects; when not, a redirect's head ends the request.
    var followsRedirects: Bool
    var configuration: HTTPTransport.Configuration
    var caFile: String?
    /// Whether HTTP/2 may be negotiated (over TLS): the configuration's, or the job option
    /// `http_version`.
    var allowsHTTP2: Bool
    var connectTimeout: Duration
    var idleTimeout: Duration
}

/// A credential given for one authentication scheme.
struct HTTPAnswer: Sendable {
    var credential: Credential
    var scheme: HTTPAuthentication.Scheme
}

/// How one request ended, collected on the curl thread before the easy handle is freed.
struct CurlOutcome: Sendable {
    /// libcurl's result.
    var code: CURLcode
    /// libcurl's own explanation (CURLOPT_ERRORBUFFER), possibly empty.
    var detail: String
    /// The last complete response head (after redirects and curl's own authentication rounds).
    var head: ResponseHead?
    /// Whether `begin` was called on the sink.
    var began: Bool
    /// The transfer was aborted because the status says it failed (4xx, 5xx).
    var failedStatus: Bool
    /// An error thrown by the sink, to be rethrown unchanged.
    var sinkError: (any Error)?
    /// The URL that answered last (after redirects), as libcurl reports it; parsed only when needed.
    var effectiveURL: String?
    /// Body bytes handed to the sink.
    var bodyBytes: Int64
    /// Why the answer to a piece's range was refused before any byte was written.
    var refusal: TransportError?
}

/// One HTTP request on one easy handle, with the state its libcurl callbacks share.
///
/// Built on the caller's thread; from the moment it is submitted to ``CurlMulti`` until
/// ``finish(result:)`` only the curl thread touches it.
final class CurlRequest: @unchecked Sendable {
    private enum Phase {
        /// Reading a response head.
        case head
        /// A response whose body is not ours (redirect, authentication round, 416): dropped.
        case discarding
        /// The final response's body: into the sink.
        case body
    }

    let easy: EasyHandle
    let url: URL
    private let plan: RequestPlan
    private let sink: any TransferSink
    private unowned let engine: CurlMulti
    private var headerList: UnsafeMutablePointer<curl_slist>?
    private let errorBuffer: UnsafeMutablePointer<CChar>

    var continuation: CheckedContinuation<CurlOutcome, any Error>?
    var isCancelled = false
    var isPaused = false
    /// Counts callbacks with bytes from the source (and resumptions after a pause), so that the
    /// curl thread can tell a stalled transfer without reading the clock per chunk.
    var activity: UInt64 = 0
    /// Started again when the request enters the multi handle.
    private var idle: IdleWatch
    /// Set when the request was ended for receiving nothing for the idle timeout.
    private var stallDetail: String?

    private var phase = Phase.head
    private var current: ResponseHead?
    private var final: ResponseHead?
    private var began = false
    private var failedStatus = false
    private var sinkError: (any Error)?
    private var bodyBytes: Int64 = 0
    /// Write-behind for a large body (curl thread only).
    private var writer: BodyWriter?
    /// The write-behind still handing bytes to the sink after libcurl finished (curl thread only).
    private var draining: BodyWriter?
    /// Where the body goes when the resource is split (``SplitDownload``): given for a piece's
    /// request, set as the head arrives for the request that began one.
    private var piece: PieceWriter?
    /// Whether this request fetches a piece of a split resource (it never calls `begin`).
    private let isPieceRequest: Bool
    /// The split this request may start when it begins.
    private let split: SplitDownload?
    private var refusal: TransportError?
    /// The piece writer, read once the request ended.
    var pieceWriter: PieceWriter? { piece }

    /// Creates a request; `split` may split the resource as the head arrives, and a request
    /// with a `piece` fetches that piece only.
    init(plan: RequestPlan, sink: any TransferSink, engine: CurlMulti, split: SplitDownload? = nil, piece: PieceWriter? = nil) throws {
        // A fresh handle per request, not a reset one: libcurl 7.88 refuses CURLOPT_BUFFERSIZE once
        // a handle has its receive buffer, and curl_easy_reset sets reads back to 16 KiB.
        // curl_easy_init is about 0.1 % of a profile of 1,000 small files.
        guard let raw = curl_easy_init() else {
            throw TransportError(.ioError, "curl_easy_init failed (out of memory)", url: plan.url)
        }
        easy = EasyHandle(raw: raw)
        // Parsing the URL again to strip credentials is only worth it when it may have some.
        url = plan.url.absoluteString.utf8.contains(UInt8(ascii: "@")) ? plan.url.redacted : plan.url
        self.plan = plan
        self.sink = sink
        self.engine = engine
        self.split = split
        self.piece = piece
        isPieceRequest = piece != nil
        idle = IdleWatch(timeout: plan.idleTimeout, activity: 0, at: .now)
        errorBuffer = .allocate(capacity: Int(PAPERBOY_CURL_ERROR_SIZE) + 1)
        errorBuffer.initialize(repeating: 0, count: Int(PAPERBOY_CURL_ERROR_SIZE) + 1)
        try configure()
    }

    deinit {
        curl_easy_cleanup(easy.raw)
        curl_slist_free_all(headerList)
        errorBuffer.deallocate()
    }

    // MARK: Options

    private func configure() throws {
        let handle = easy.raw
        let configuration = plan.configuration
        var failures: [String] = []
        func check(_ code: CURLcode, _ name: String) {
            if code != CURLE_OK { failures.append("\(name): \(String(cString: curl_easy_strerror(code)))") }
        }
        func set(_ option: CURLoption, _ value: Int, _ name: String) {
            check(paperboy_easy_setopt_long(handle, option, value), name)
        }
        func set(_ option: CURLoption, _ value: String, _ name: String) {
            check(paperboy_easy_setopt_string(handle, option, value), name)
        }

        set(CURLOPT_URL, plan.url.absoluteString, "URL")
        set(CURLOPT_PROTOCOLS_STR, "http,https", "PROTOCOLS_STR")
        // Both are checked again on each redirect's Location (``downgrade(to:)``).
        let keepsHTTPS = plan.url.scheme?.lowercased() == "https" && !configuration.allowsInsecureRedirects
        set(CURLOPT_REDIR_PROTOCOLS_STR, keepsHTTPS ? "https" : "http,https", "REDIR_PROTOCOLS_STR")
        set(CURLOPT_NOSIGNAL, 1, "NOSIGNAL")
        set(CURLOPT_FOLLOWLOCATION, plan.followsRedirects ? 1 : 0, "FOLLOWLOCATION")
        set(CURLOPT_MAXREDIRS, configuration.maxRedirects, "MAXREDIRS")
        // A request with credentials does not follow redirects (the transport does, without
        // them); this keeps libcurl from sending them to another host should that change.
        set(CURLOPT_UNRESTRICTED_AUTH, 0, "UNRESTRICTED_AUTH")
        set(CURLOPT_SSL_VERIFYPEER, 1, "SSL_VERIFYPEER")
        set(CURLOPT_SSL_VERIFYHOST, 2, "SSL_VERIFYHOST")
        if let caFile = plan.caFile { set(CURLOPT_CAINFO, caFile, "CAINFO") }
        set(CURLOPT_BUFFERSIZE, configuration.bufferSize, "BUFFERSIZE")
        set(CURLOPT_USERAGENT, configuration.userAgent, "USERAGENT")
        set(CURLOPT_TCP_KEEPALIVE, 1, "TCP_KEEPALIVE")
        set(CURLOPT_SUPPRESS_CONNECT_HEADERS, 1, "SUPPRESS_CONNECT_HEADERS")
        // HTTP/2 is only ever negotiated over TLS (CURL_HTTP_VERSION_2TLS): a plain http: request
        // never waits for another connection. With PIPEWAIT it did, in libcurl's pending list
        // until a transfer to that host ended: two pieces asked of a mirror at once went one
        // after the other (SplitBehaviourTests).
        if plan.allowsHTTP2, CurlMulti.supportsHTTP2, plan.url.scheme?.lowercased() == "https" {
            set(CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_2TLS, "HTTP_VERSION")
            // Wait for a connection to the host being set up rather than opening another: its
            // streams are multiplexed (CURLMOPT_PIPELINING), one connection per host.
            set(CURLOPT_PIPEWAIT, 1, "PIPEWAIT")
        } else {
            set(CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_1_1, "HTTP_VERSION")
        }
        set(CURLOPT_CONNECTTIMEOUT_MS, max(1, Int(plan.connectTimeout.milliseconds)), "CONNECTTIMEOUT_MS")
        // Stalls are found by the curl thread (``IdleWatch``) within about a second of the
        // idle timeout: libcurl's LOW_SPEED_TIME averages the speed over 5 s and fired up to 5 s late.
        let ranged = plan.offset > 0 || plan.rangeEnd != nil
        if let end = plan.rangeEnd {
            set(CURLOPT_RANGE, "\(plan.offset)-\(end - 1)", "RANGE")
        } else if plan.offset > 0 {
            set(CURLOPT_RANGE, "\(plan.offset)-", "RANGE")
        }

        var lines: [String] = []
        for (name, value) in plan.headers.sorted(by: { $0.key < $1.key }) {
            // Range, validators and encoding belong to the resume logic.
            if ["range", "if-range", "accept-encoding"].contains(name.lowercased()) { continue }
            lines.append("\(name): \(value)")
        }
        lines.append("Accept-Encoding: identity")
        if let ifRange = plan.ifRange, ranged { lines.append("If-Range: \(ifRange)") }
        for line in lines { headerList = curl_slist_append(headerList, line) }
        check(paperboy_easy_setopt_slist(handle, CURLOPT_HTTPHEADER, headerList), "HTTPHEADER")

        // The proxy is always explicit, so that the proxy a challenge names is the one answered.
        set(CURLOPT_PROXY, plan.proxy ?? "", "PROXY")
        if configuration.proxy != nil { set(CURLOPT_NOPROXY, "", "NOPROXY") }
        if let answer = plan.originAnswer {
            try applyCredential(answer, toProxy: false, set: { option, value, name in set(option, value, name) },
                                setNumber: { option, value, name in set(option, value, name) })
        }
        if let answer = plan.proxyAnswer {
            try applyCredential(answer, toProxy: true, set: { option, value, name in set(option, value, name) },
                                setNumber: { option, value, name in set(option, value, name) })
        }

        let context = Unmanaged.passUnretained(self).toOpaque()
        check(paperboy_easy_setopt_write_function(handle, CURLOPT_WRITEFUNCTION, curlWriteCallback), "WRITEFUNCTION")
        check(paperboy_easy_setopt_pointer(handle, CURLOPT_WRITEDATA, context), "WRITEDATA")
        check(paperboy_easy_setopt_write_function(handle, CURLOPT_HEADERFUNCTION, curlHeaderCallback), "HEADERFUNCTION")
        check(paperboy_easy_setopt_pointer(handle, CURLOPT_HEADERDATA, context), "HEADERDATA")
        check(paperboy_easy_setopt_pointer(handle, CURLOPT_ERRORBUFFER, errorBuffer), "ERRORBUFFER")

        if !failures.isEmpty {
            throw TransportError(
                .protocolError, "libcurl \(CurlMulti.version) refused options for \(url.redactedString): \(failures.joined(separator: "; "))",
                url: url, isRetryable: false)
        }
    }

    private func applyCredential(
        _ answer: HTTPAnswer, toProxy proxy: Bool,
        set: (CURLoption, String, String) -> Void, setNumber: (CURLoption, Int, String) -> Void
    ) throws {
        let (credential, scheme) = (answer.credential, answer.scheme)
        if let token = credential.token, scheme == .bearer || credential.user == nil {
            guard !proxy else {
                throw TransportError(.authenticationFailed, "a bearer token cannot answer a proxy challenge for \(url.redactedString)",
                                     url: url, isRetryable: false)
            }
            set(CURLOPT_XOAUTH2_BEARER, token, "XOAUTH2_BEARER")
            setNumber(CURLOPT_HTTPAUTH, PAPERBOY_CURLAUTH_BEARER, "HTTPAUTH")
            return
        }
        let method = scheme == .digest ? PAPERBOY_CURLAUTH_DIGEST : PAPERBOY_CURLAUTH_BASIC
        set(proxy ? CURLOPT_PROXYUSERNAME : CURLOPT_USERNAME, credential.user ?? "", "USERNAME")
        set(proxy ? CURLOPT_PROXYPASSWORD : CURLOPT_PASSWORD, credential.password ?? "", "PASSWORD")
        setNumber(proxy ? CURLOPT_PROXYAUTH : CURLOPT_HTTPAUTH, method, "HTTPAUTH")
    }

    // MARK: Callbacks (curl thread)

    /// One header line, status line or the blank line ending a head.
    func receiveHeader(_ bytes: UnsafeRawBufferPointer) -> Int {
        activity &+= 1
        var end = bytes.count
        while end > 0, bytes[end - 1] == UInt8(ascii: "\n") || bytes[end - 1] == UInt8(ascii: "\r") { end -= 1 }
        let line = UnsafeRawBufferPointer(rebasing: bytes[0..<end])

        if let status = ResponseHead.statusCode(ofStatusLine: line) {
            current = ResponseHead(status: status)
            phase = .head
            return bytes.count
        }
        guard phase == .head, let head = current else { return bytes.count }  // trailers
        guard line.isEmpty else {
            if let field = ResponseHead.field(of: line) {
                // In place: a copy of the head would copy its fields for every line.
                current?.fields.append(field)
            }
            return bytes.count
        }
        return headComplete(head) ? bytes.count : 0
    }

    /// Decides what the body of a complete head is for; `false` aborts the transfer.
    private func headComplete(_ head: ResponseHead) -> Bool {
        switch head.status {
        case 100..<200:
            return true
        case 200..<300 where isPieceRequest:
            final = head
            phase = .body
            // Checked before any byte is written: never two versions in one file.
            if let piece, let requested = piece.requested,
               let refused = piece.split.refusal(of: head, requested: requested, url: answeringURL.redacted) {
                refusal = refused
                phase = .discarding
                return false
            }
            return true
        case 200..<300:
            final = head
            phase = .body
            do {
                // Before `begin`: no byte of an encoded body reaches the sink.
                try ContentEncoding.requireIdentity(head, url: answeringURL)
                let response = try RangeResume.response(for: head, requestedOffset: plan.offset, url: url)
                began = true
                try sink.begin(response)
                if let split, let writer = split.start(response, head: head, plan: plan, url: answeringURL) {
                    // Every piece is written on this thread: no write-behind, whose thread would
                    // call the sink beside this one.
                    piece = writer
                } else {
                    startWriteBehind(for: response)
                }
                return true
            } catch {
                sinkError = error
                return false
            }
        case 300..<400 where head.value("location") != nil:
            if let refused = downgrade(to: head.value("location") ?? "") {
                sinkError = refused
                return false
            }
            // curl follows it (or stops with CURLE_TOO_MANY_REDIRECTS), or the transport does.
            if !plan.followsRedirects { final = head }
            phase = .discarding
            return true
        case 401, 407, 416:
            // curl may answer an authentication round itself; the transport decides at the end.
            final = head
            phase = .discarding
            return true
        default:
            final = head
            failedStatus = true
            phase = .discarding
            return false
        }
    }

    /// The error refusing a redirect from an https URL to `location` when it is plain http
    /// (unless ``HTTPTransport/Configuration/allowsInsecureRedirects``), else `nil`.
    private func downgrade(to location: String) -> TransportError? {
        guard !plan.configuration.allowsInsecureRedirects else { return nil }
        let current = answeringURL
        guard current.scheme?.lowercased() == "https",
              let target = URL(string: location.trimmingCharacters(in: .whitespaces), relativeTo: current)?.absoluteURL,
              target.scheme?.lowercased() == "http" else { return nil }
        return TransportError(
            .insecureRedirect,
            "refused the redirect from \(current.redactedString) to \(target.redactedString): it leaves https for plain http",
            url: url, isRetryable: false)
    }

    /// The URL libcurl is answered from now (after the redirects it followed), parsed; it may
    /// hold credentials.
    private var answeringURL: URL {
        var effective: UnsafeMutablePointer<CChar>?
        _ = paperboy_easy_getinfo_string(easy.raw, CURLINFO_EFFECTIVE_URL, &effective)
        return effective.flatMap { URL(string: String(cString: $0)) } ?? url
    }

    /// Body bytes: into the sink, or dropped when they belong to a response that is not ours.
    func receiveBody(_ bytes: UnsafeRawBufferPointer) -> Int {
        activity &+= 1
        switch phase {
        case .head, .discarding:
            return bytes.count
        case .body:
            if let piece {
                switch piece.offer(bytes) {
                case .taken:
                    bodyBytes += Int64(bytes.count)
                    return bytes.count
                case .paused(let whenWritable):
                    isPaused = true
                    whenWritable { [self] in engine.unpause(self) }
                    return PAPERBOY_CURL_WRITEFUNC_PAUSE
                case .finished:
                    return 0
                case .failed(let error):
                    sinkError = error
                    return 0
                }
            }
            if let writer {
                switch writer.offer(bytes) {
                case .taken:
                    return bytes.count
                case .full:
                    // The writer asks for the unpause once curl's chunk fits.
                    isPaused = true
                    return PAPERBOY_CURL_WRITEFUNC_PAUSE
                case .failed(let error):
                    sinkError = error
                    return 0
                }
            }
            do {
                if try sink.tryWrite(bytes) {
                    bodyBytes += Int64(bytes.count)
                    return bytes.count
                }
            } catch {
                sinkError = error
                return 0
            }
            // curl keeps this chunk and offers it again after curl_easy_pause(CONT).
            isPaused = true
            sink.whenWritable { [self] in engine.unpause(self) }
            return PAPERBOY_CURL_WRITEFUNC_PAUSE
        }
    }

    /// Starts writing behind when the body is large enough for the thread to pay off.
    private func startWriteBehind(for response: TransferResponse) {
        let configuration = plan.configuration
        guard configuration.writeBehindBufferSize > 0,
              let length = response.expectedLength, length - response.offset >= Int64(configuration.writeBehindMinimumLength)
        else { return }
        writer = BodyWriter.start(
            capacity: configuration.writeBehindBufferSize, piece: configuration.bufferSize, sink: sink,
            onSpace: { [self] in engine.unpause(self) })
    }

    // MARK: Stalls (curl thread)

    /// Starts the idle clock (when the request enters the multi handle).
    func startIdleClock(at now: ContinuousClock.Instant) {
        idle = IdleWatch(timeout: plan.idleTimeout, activity: activity, at: now)
    }

    /// Whether the source sent nothing for the idle timeout (``IdleWatch``), looked at `now`
    /// after a `curl_multi_perform` that started at `performStart`.
    func isStalled(performStart: ContinuousClock.Instant, now: ContinuousClock.Instant) -> Bool {
        idle.isStalled(activity: activity, isPaused: isPaused, performStart: performStart, now: now)
    }

    /// Ends a stalled request (already removed from the multi handle) with a timeout.
    func finishStalled() {
        let milliseconds = plan.idleTimeout.milliseconds
        stallDetail = "nothing received for " + (milliseconds % 1000 == 0 ? "\(milliseconds / 1000) s" : "\(milliseconds) ms")
        finish(result: CURLE_OPERATION_TIMEDOUT)
    }

    // MARK: Ending (curl thread)

    /// Reports how the request ended, once a write-behind has handed the sink every byte.
    func finish(result: CURLcode) {
        var effective: UnsafeMutablePointer<CChar>?
        _ = paperboy_easy_getinfo_string(easy.raw, CURLINFO_EFFECTIVE_URL, &effective)
        // A request stopped because its piece was written ended as it should.
        let code = result == CURLE_WRITE_ERROR && piece?.reachedEnd == true && sinkError == nil ? CURLE_OK : result
        let outcome = CurlOutcome(
            code: code, detail: stallDetail ?? String(cString: errorBuffer), head: final, began: began,
            failedStatus: failedStatus, sinkError: sinkError,
            effectiveURL: effective.map { String(cString: $0) }, bodyBytes: bodyBytes, refusal: refusal)
        guard let writer else {
            resume(with: .success(outcome))
            return
        }
        self.writer = nil
        draining = writer
        // Bytes received before a failure are good: they reach the file either way.
        writer.end { [self] ending in
            guard !ending.abandoned else {
                resume(with: .failure(CancellationError()))
                return
            }
            var outcome = outcome
            outcome.bodyBytes = ending.written
            if let failure = ending.failure { outcome.sinkError = failure }
            resume(with: .success(outcome))
        }
    }

    /// Reports a cancelled request.
    func finish(cancelled: Bool) {
        guard let writer else {
            resume(with: .failure(CancellationError()))
            return
        }
        self.writer = nil
        writer.end(stopping: true) { [self] _ in resume(with: .failure(CancellationError())) }
    }

    /// Cancels a request libcurl has finished but whose write-behind is still draining.
    func cancelDrain() {
        draining?.abandon()
    }

    /// Reports a request curl would not run.
    func finish(failure: TransportError) {
        resume(with: .failure(failure))
    }

    private func resume(with result: Result<CurlOutcome, any Error>) {
        guard let continuation else { return }
        self.continuation = nil
        continuation.resume(with: result)
    }
}

extension Duration {
    /// Whole milliseconds, rounded down.
    var milliseconds: Int64 {
        components.seconds * 1000 + components.attoseconds / 1_000_000_000_000_000
    }
}

let curlWriteCallback: curl_write_callback = { pointer, size, count, context in
    guard let context else { return 0 }
    let request = Unmanaged<CurlRequest>.fromOpaque(context).takeUnretainedValue()
    return request.receiveBody(UnsafeRawBufferPointer(start: pointer, count: size * count))
}

let curlHeaderCallback: curl_write_callback = { pointer, size, count, context in
    guard let context else { return 0 }
    let request = Unmanaged<CurlRequest>.fromOpaque(context).takeUnretainedValue()
    return request.receiveHeader(UnsafeRawBufferPointer(start: pointer, count: size * count))
}
