import CPaperboyCurl
import Foundation
import Logging
import Paperboy

/// Fetches `http:` and `https:` URLs with libcurl.
///
/// All transfers of all `HTTPTransport` values share one libcurl multi handle driven by one
/// dedicated thread (never a cooperative-pool thread): connections to a host are reused across
/// assets, HTTP/2 is used when the server and libcurl both speak it, and back-pressure from
/// the sink pauses the transfer in libcurl instead of buffering. The value itself is cheap to
/// copy.
///
/// - Resume: `Range: bytes=N-` guarded by `If-Range` (the strong ETag, else Last-Modified), so a
///   changed resource arrives whole (200) and the core starts over instead of splicing versions.
///   A 416 whose `Content-Range: bytes */TOTAL` equals the bytes on disk finishes the transfer.
/// - Encoding: `Accept-Encoding: identity` is always sent, and a success whose `Content-Encoding`
///   names another coding is refused before any byte reaches the sink
///   (`.contentEncodingNotIdentity`, see ``ContentEncoding``).
/// - Authentication: a 401 or 407 with Basic, Digest or Bearer raises an ``AuthChallenge``
///   through the sink; the answer is handed to libcurl. A 407's challenge is a proxy's
///   (``AuthChallenge/isProxy``, naming the proxy), answered in `Proxy-Authorization` only.
///   An answer goes only to the URL whose challenge it answered: a request carrying one does
///   not let libcurl follow redirects, the transport follows them itself without the answer,
///   and a challenge at the new URL is raised again (so the core's ``URLScope`` decides
///   whether a configured credential covers it). After
///   ``Configuration/maxAuthenticationFailures`` refused answers the transfer fails with
///   `.authenticationFailed`.
/// - Redirects: only to `http` and `https`, and never from `https` to `http`
///   (`.insecureRedirect`, unless ``Configuration/allowsInsecureRedirects``).
/// - Several connections: with `TransferJob.connectionsPerAsset` above 1, a file of at least
///   32 MiB from a source serving ranges of one version is fetched in pieces over that many
///   connections (`SplitDownload`); a range answered with the whole file or another version
///   is refused and its connection dropped. The job's mirrors (`TransferJob.mirrors`) serve
///   pieces too, each connection asking one source; a mirror whose answer is refused, fails or
///   stalls is dropped for the transfer and named in the log (``Configuration``'s logger).
/// - TLS: verified always, against the system store or a CA file (``Configuration/caFile``, or
///   the job option `ca_file`). Proxies come from ``Configuration/proxy``, else the standard
///   `http_proxy`, `https_proxy`, `all_proxy` and `no_proxy` variables.
public struct HTTPTransport: Transport {
    /// Settings applied to every transfer.
    public struct Configuration: Sendable {
        /// A PEM file of certificate authorities trusted instead of the system store.
        public var caFile: String?
        /// Redirects followed before giving up with `.tooManyRedirects`.
        public var maxRedirects: Int
        /// libcurl's receive buffer: the largest chunk handed to the sink at once.
        public var bufferSize: Int
        /// The `User-Agent` header (default `Paperboy libcurl/VERSION`).
        public var userAgent: String
        /// Refused credentials tolerated before failing with `.authenticationFailed`.
        public var maxAuthenticationFailures: Int
        /// The ring through which a large body is written behind: the curl thread copies into it
        /// and reads the socket again while a thread of the transfer writes to the sink. `0`
        /// writes inline on the curl thread. Kept at least twice ``bufferSize``. Default 2 MiB:
        /// against 1 MiB, a 1 GiB download into tmpfs took 0.69 s instead of 0.75 (the curl thread
        /// paused half as often), for 1 MiB more resident.
        public var writeBehindBufferSize: Int
        /// Bodies announcing at least this many bytes (from the resume offset) are written behind.
        public var writeBehindMinimumLength: Int
        /// The proxy for every request, such as `http://proxy.example:3128` (it may hold
        /// `user:password@`); `""` for none. `nil` (the default) reads `http_proxy`, `https_proxy`,
        /// `all_proxy` and `no_proxy` as libcurl does.
        public var proxy: String?
        /// Follow redirects from `https` to plain `http`. Off by default: such a redirect fails
        /// with `.insecureRedirect`, naming both URLs.
        public var allowsInsecureRedirects: Bool
        /// Negotiate HTTP/2 over TLS where the server offers it (ALPN), its requests to one host
        /// then streams of one connection; `false` speaks HTTP/1.1 always. Plain `http:` is
        /// HTTP/1.1 either way. The job option `http_version` (`"1.1"` or `"2"`) wins.
        public var allowsHTTP2 = true
        /// Resources with fewer bytes left are fetched over one connection whatever
        /// `TransferJob.connectionsPerAsset` allows (see ``SplitDownload``).
        var splitThreshold: Int64 = 32 << 20
        /// The smallest piece an idle connection takes from another (and the smallest segment):
        /// near the end the connections finish within about twice this of each other.
        var minimumPiece: Int64 = 1 << 20
        /// The largest segment asked of the sink at once (a quarter of what is left of a piece,
        /// down to ``minimumPiece``): a piece is cut only past its segment.
        var largestSegment: Int64 = 16 << 20
        /// The size the pieces dealt from the front shrink to near the end (``RangeBoard``):
        /// the last pieces in flight are what the SHA-256 of the file still has to read after
        /// the last byte; each piece is one range request.
        var finalPiece: Int64 = 16 << 20
        /// Where the split names a mirror it dropped, and the bytes each source sent.
        var logger = Logger(label: "paperboy.http")

        /// Creates settings.
        public init(
            caFile: String? = nil, maxRedirects: Int = 10, bufferSize: Int = 512 * 1024,
            userAgent: String? = nil, maxAuthenticationFailures: Int = 3,
            writeBehindBufferSize: Int = 2 << 20, writeBehindMinimumLength: Int = 8 << 20,
            proxy: String? = nil, allowsInsecureRedirects: Bool = false
        ) {
            self.caFile = caFile
            self.maxRedirects = max(0, maxRedirects)
            // libcurl accepts 1 KiB to 10 MiB; below 512 KiB writes to files get slower.
            self.bufferSize = min(10 << 20, max(1024, bufferSize))
            self.userAgent = userAgent ?? "Paperboy libcurl/\(CurlMulti.version)"
            self.maxAuthenticationFailures = max(1, maxAuthenticationFailures)
            self.writeBehindBufferSize = writeBehindBufferSize <= 0 ? 0 : max(writeBehindBufferSize, 2 * self.bufferSize)
            self.writeBehindMinimumLength = max(0, writeBehindMinimumLength)
            self.proxy = proxy
            self.allowsInsecureRedirects = allowsInsecureRedirects
        }
    }

    /// The settings of this transport.
    public var configuration: Configuration
    private let engine: CurlMulti

    /// Creates a transport.
    ///
    /// - Parameters:
    ///   - caFile: certificate authorities (PEM) to trust instead of the system store.
    ///   - maxRedirects: redirects followed at most (default 10).
    ///   - bufferSize: libcurl's receive buffer in bytes (default 512 KiB).
    ///   - userAgent: the `User-Agent` header.
    public init(caFile: String? = nil, maxRedirects: Int = 10, bufferSize: Int = 512 * 1024, userAgent: String? = nil) {
        self.init(configuration: Configuration(caFile: caFile, maxRedirects: maxRedirects, bufferSize: bufferSize, userAgent: userAgent))
    }

    /// Creates a transport with complete settings.
    public init(configuration: Configuration) {
        self.init(configuration: configuration, engine: CurlMulti.shared)
    }

    private init(configuration: Configuration, engine: CurlMulti) {
        self.configuration = configuration
        self.engine = engine
    }

    /// A transport on an engine of its own (a curl thread, a multi handle and its connection
    /// cache), for a test that counts connections without other tests' transfers in the cache.
    package static func withAnEngineOfItsOwn(configuration: Configuration) -> HTTPTransport {
        HTTPTransport(configuration: configuration, engine: CurlMulti())
    }

    public var schemes: Set<String> { ["http", "https"] }
    public var capabilities: TransportCapabilities { [.resume, .challenges, .validators, .ranges, .segments] }

    public func transfer(_ job: TransferJob, into sink: any TransferSink) async throws {
        var target = try Self.validated(job.url)
        try Self.validate(headers: job.headers, of: job.url)
        let allowsHTTP2 = try Self.allowsHTTP2(job.options["http_version"], of: job.url) ?? configuration.allowsHTTP2

        var ifRange = job.offset > 0 ? RangeResume.ifRange(for: job.validator) : nil
        // A range the library asks for (the missing chunks of an indexed asset) is asked for
        // with or without a validator: the library checks each chunk's SHA-256.
        var offset = ifRange == nil && job.rangeEnd == nil ? 0 : job.offset
        // The origin and the proxy are answered separately: one's credential never goes to the other.
        var originAnswer: HTTPAnswer?
        var proxyAnswer: HTTPAnswer?
        var refusedByOrigin = 0
        var refusedByProxy = 0
        // The proxy `proxyAnswer` was given to, and the redirects followed without libcurl.
        var answeredProxy: String?
        var redirects = 0

        while true {
            try Task.checkCancellation()
            let proxy = HTTPProxy.proxy(for: target, configured: configuration.proxy)
            if proxyAnswer != nil, proxy != answeredProxy {
                // A redirect led to a URL reached through another proxy (or none).
                (proxyAnswer, refusedByProxy) = (nil, 0)
            }
            var plan = RequestPlan(
                url: target, offset: offset, ifRange: ifRange, headers: job.headers,
                originAnswer: originAnswer, proxyAnswer: proxyAnswer, proxy: proxy,
                followsRedirects: configuration.maxRedirects > 0 && originAnswer == nil,
                configuration: configuration, caFile: job.options["ca_file"] ?? configuration.caFile,
                allowsHTTP2: allowsHTTP2, connectTimeout: job.connectTimeout, idleTimeout: job.idleTimeout)
            plan.rangeEnd = job.rangeEnd
            let outcome = try await perform(plan, into: sink, job: job)
            if let error = outcome.sinkError { throw error }
            if outcome.began, outcome.code == CURLE_OK, !outcome.failedStatus { return }
            // Only a failure or another round needs the URL that answered (parsed, redacted).
            let answered = (outcome.effectiveURL.flatMap { URL(string: $0) } ?? target).redacted
            if outcome.failedStatus, let head = outcome.head { throw TransportError.http(head, url: answered) }
            if outcome.began {
                guard outcome.code == CURLE_OK else {
                    let expected = outcome.head.flatMap { try? RangeResume.response(for: $0, requestedOffset: offset, url: answered) }?.expectedLength
                    throw TransportError.curl(outcome.code, detail: outcome.detail, url: answered,
                                              received: offset + outcome.bodyBytes, expected: expected)
                }
                return
            }
            guard outcome.code == CURLE_OK else {
                throw TransportError.curl(outcome.code, detail: outcome.detail, url: answered)
            }
            guard let head = outcome.head else {
                throw TransportError(.protocolError, "\(answered.redactedString) sent no usable response", url: answered)
            }

            switch head.status {
            case 416:
                if offset > 0, let total = RangeResume.unsatisfiedLength(of: head), total == offset {
                    // Everything is on disk already. If-Range was sent, so a 416 (not a 200) means
                    // the server holds the same version.
                    let validator = RangeResume.validator(of: head) ?? job.validator
                    try sink.begin(TransferResponse(offset: offset, expectedLength: total, validator: validator))
                    return
                }
                if offset > 0 {
                    offset = 0
                    ifRange = nil
                    continue
                }
                throw TransportError.http(head, url: answered)
            case 407:
                if proxyAnswer != nil { refusedByProxy += 1 }
                let proxyURL = proxy.flatMap(HTTPProxy.url(of:))
                proxyAnswer = try await authenticate(head, proxy: proxyURL, url: answered, refused: refusedByProxy, sink: sink)
                answeredProxy = proxy
            case 300..<400 where originAnswer != nil && configuration.maxRedirects > 0:
                target = try redirect(head, from: answered, count: &redirects)
                // The answer was for the URL that asked: the new one is asked anew.
                (originAnswer, refusedByOrigin) = (nil, 0)
            case 401:
                if originAnswer != nil { refusedByOrigin += 1 }
                originAnswer = try await authenticate(head, proxy: nil, url: answered, refused: refusedByOrigin, sink: sink)
                // The challenge came from where the redirects led: ask there, with the credential.
                target = answered
            default:
                throw TransportError.http(head, url: answered)
            }
        }
    }

    /// Runs the request of `plan`; with more than one connection, a resource it begins may be
    /// split (``SplitDownload``), and the outcome is then that of every piece: success once all
    /// are written.
    ///
    /// - Throws: the sink's errors, `CancellationError`, and, for a split resource whose pieces
    ///   could not all be fetched, the latest reason a connection was dropped.
    private func perform(_ plan: RequestPlan, into sink: any TransferSink, job: TransferJob) async throws -> CurlOutcome {
        // A range the library asks for (the missing chunks of an indexed asset) is one request.
        let connections = job.rangeEnd == nil ? job.connectionsPerAsset : 1
        guard connections > 1 else { return try await engine.perform(CurlRequest(plan: plan, sink: sink, engine: engine)) }
        let split = SplitDownload(
            settings: .init(connections: connections, threshold: configuration.splitThreshold,
                            minimumPiece: configuration.minimumPiece, largestSegment: configuration.largestSegment,
                            finalPiece: configuration.finalPiece,
                            mirrorStallWindow: SplitDownload.stallWindow(idleTimeout: job.idleTimeout)),
            sink: sink, mirrors: mirrorPlans(job, like: plan), held: (job.heldRanges, job.offset, job.validator),
            logger: configuration.logger, asset: job.assetIdentifier)
        let request = try CurlRequest(plan: plan, sink: sink, engine: engine, split: split)
        defer { (sink as? any SplitReportingSink)?.reportSplit(nil) }
        let engine = engine
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await split.runOtherConnections(engine) }
            // Ended either way, so that the other connections never wait for a start that
            // cannot come (a cancelled transfer awaits them).
            defer { split.firstRequestEnded() }
            var outcome = try await engine.perform(request)
            split.firstRequestEnded()
            guard split.isSplit, let writer = request.pieceWriter else {
                try await group.waitForAll()
                return outcome
            }
            let url = plan.url.redacted
            if let failure = try split.failure(of: outcome, writer: writer, url: url) {
                split.drop(0, failure)
            } else {
                // The first connection goes on with what is left, as the others do.
                try await split.runConnection(0, engine: engine)
            }
            if split.isComplete {
                // Connections still asking for a piece another one wrote have nothing left to do.
                group.cancelAll()
                while let result = await group.nextResult() {
                    if case .failure(let error) = result, !(error is CancellationError) { throw error }
                }
            } else {
                try await group.waitForAll()
            }
            try split.requireComplete(url: url)
            split.logSources()
            outcome.code = CURLE_OK
            outcome.failedStatus = false
            return outcome
        }
    }

    /// The requests for `job`'s mirrors, built like `plan` (the job's URL's): each asks its own
    /// URL, through the proxy for it, follows no redirect, and carries no answer to a challenge;
    /// to another origin than the job's URL, the job's `Authorization`, `Proxy-Authorization` and
    /// `Cookie` headers are left out, as libcurl leaves them out of a redirect to another host.
    /// A mirror that is not an http or https URL with a host, or is the job's URL, is left out.
    private func mirrorPlans(_ job: TransferJob, like plan: RequestPlan) -> [RequestPlan] {
        var plans: [RequestPlan] = []
        for mirror in job.mirrors {
            guard let url = try? Self.validated(mirror), url != job.url, !plans.contains(where: { $0.url == url }) else {
                configuration.logger.warning("asset \(job.assetIdentifier): mirror \(mirror.redactedString) left out: not another http or https URL with a host")
                continue
            }
            var headers = job.headers
            if !URLScope.isSameOrigin(url, job.url) {
                headers = headers.filter { !["authorization", "proxy-authorization", "cookie"].contains($0.key.lowercased()) }
            }
            plans.append(RequestPlan(
                url: url, offset: 0, ifRange: nil, headers: headers, originAnswer: nil, proxyAnswer: nil,
                proxy: HTTPProxy.proxy(for: url, configured: configuration.proxy), followsRedirects: false,
                configuration: configuration, caFile: plan.caFile, allowsHTTP2: plan.allowsHTTP2,
                connectTimeout: plan.connectTimeout, idleTimeout: plan.idleTimeout))
        }
        return plans
    }

    /// The URL a redirect of a request carrying an answer leads to (libcurl did not follow it).
    ///
    /// - Throws: ``TransportError`` for a redirect without `Location`, more than
    ///   ``Configuration/maxRedirects`` of them, or one to a scheme other than http and https
    ///   (https to http was refused as the head arrived).
    private func redirect(_ head: ResponseHead, from current: URL, count: inout Int) throws -> URL {
        guard let location = head.value("location"),
              let next = URL(string: location.trimmingCharacters(in: .whitespaces), relativeTo: current)?.absoluteURL else {
            throw TransportError.http(head, url: current)
        }
        count += 1
        guard count <= configuration.maxRedirects else {
            throw TransportError(.tooManyRedirects, "too many redirects from \(current.redactedString) (more than \(configuration.maxRedirects))",
                                 url: current, isRetryable: false)
        }
        return try Self.validated(next)
    }

    /// Raises the challenge of a 401 or 407 through the sink and returns the credential to send.
    ///
    /// A 407 is a proxy's challenge (``AuthChallenge/isProxy``, naming `proxy` when known), so
    /// that configured credentials for the origin never answer it.
    private func authenticate(
        _ head: ResponseHead, proxy: URL?, url: URL, refused: Int, sink: any TransferSink
    ) async throws -> HTTPAnswer {
        let isProxy = head.status == 407
        let offered = HTTPAuthentication.offered(in: head.values(isProxy ? "proxy-authenticate" : "www-authenticate"))
        var failure = TransportError.http(head, url: url)
        if isProxy { failure.message += " (asked by the proxy \(proxy?.redactedString ?? "of no configured proxy"))" }
        guard !offered.isEmpty else {
            failure.message += ": no supported authentication scheme offered (Basic, Digest, Bearer)"
            throw failure
        }
        guard refused < configuration.maxAuthenticationFailures else {
            failure.message += ": credentials refused \(refused) times"
            throw failure
        }
        for offer in offered {
            let challenge = AuthChallenge(
                kind: offer.scheme.challengeKind, url: url, realm: offer.realm, previousFailureCount: refused,
                isProxy: isProxy, proxyURL: isProxy ? proxy : nil)
            switch await sink.challenge(challenge) {
            case .useCredential(let credential):
                return HTTPAnswer(credential: credential, scheme: offer.scheme)
            case .rejectProtectionSpace:
                continue
            case .performDefaultHandling, .cancelAuthenticationChallenge:
                failure.message += refused > 0 ? ": credentials refused" : ": no credentials for \(offer.scheme.rawValue) authentication"
                throw failure
            }
        }
        failure.message += ": every offered authentication scheme was declined"
        throw failure
    }

    /// What the job option `http_version` says: `"1.1"` forces HTTP/1.1, `"2"` allows HTTP/2;
    /// `nil` without the option.
    ///
    /// - Throws: ``TransportError`` `.badURL`, not retryable, naming the value, for another one.
    static func allowsHTTP2(_ option: String?, of url: URL) throws -> Bool? {
        switch option?.trimmingCharacters(in: .whitespaces) {
        case nil: return nil
        case "1.1": return false
        case "2": return true
        case let other?:
            throw TransportError(.badURL, "the option http_version = '\(TerminalText.escape(other))' for \(url.redactedString) is neither \"1.1\" nor \"2\"",
                                 url: url, isRetryable: false)
        }
    }

    /// Parses `text` as an `http:` or `https:` URL.
    ///
    /// - Throws: ``TransportError`` `.badURL` naming the problem: spaces or control characters,
    ///   another scheme, a missing host.
    public static func url(from text: String) throws -> URL {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        let shown = URL.redactedText(trimmed)
        if trimmed.unicodeScalars.contains(where: { $0 == " " || $0.properties.generalCategory == .control }) {
            throw TransportError(.badURL, "URL '\(shown)' contains spaces or control characters (encode a space as %20)", isRetryable: false)
        }
        guard let url = URL(string: trimmed, encodingInvalidCharacters: false) else {
            throw TransportError(.badURL, "malformed URL '\(shown)'", isRetryable: false)
        }
        return try validated(url)
    }

    /// `url` if this transport can fetch it.
    ///
    /// - Throws: ``TransportError`` `.badURL` for another scheme, a missing host, or spaces.
    static func validated(_ url: URL) throws -> URL {
        guard let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https" else {
            throw TransportError(.badURL, "'\(url.redactedString)' is not an http or https URL", url: url, isRetryable: false)
        }
        guard let host = url.host, !host.isEmpty else {
            throw TransportError(.badURL, "URL '\(url.redactedString)' has no host", url: url, isRetryable: false)
        }
        guard !hasSpaceOrControl(url.absoluteString) else {
            throw TransportError(.badURL, "URL '\(url.redactedString)' contains spaces or control characters", url: url, isRetryable: false)
        }
        return url
    }

    /// Whether `text` holds a space or a control character (checked on bytes when all ASCII).
    private static func hasSpaceOrControl(_ text: String) -> Bool {
        var ascii = true
        for byte in text.utf8 {
            if byte <= 0x20 || byte == 0x7F { return true }
            if byte >= 0x80 { ascii = false }
        }
        return !ascii && text.unicodeScalars.contains { $0 == " " || $0.properties.generalCategory == .control }
    }

    /// Checks that extra headers cannot smuggle lines into the request.
    static func validate(headers: [String: String], of url: URL) throws {
        for (name, value) in headers {
            let badName = name.isEmpty || name.unicodeScalars.contains { !$0.isASCII || $0.value <= 32 || $0 == ":" }
            if badName || value.contains(where: \.isNewline) || value.contains("\0") {
                throw TransportError(.badURL, "request header '\(name)' for \(url.redactedString) is malformed", url: url, isRetryable: false)
            }
        }
    }
}
