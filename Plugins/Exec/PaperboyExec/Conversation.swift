import Foundation
import Paperboy
import PaperboyFraming
import Synchronization

/// The handshake with a freshly started helper: `HELLO` both ways, version and scheme checks.
struct Handshake {
    let helper: HelperProcess
    let job: TransferJob

    func run() async throws {
        let hello = CoreHello(protocols: ExecProtocol.versions, paperboy: "1")
        do {
            try await helper.send(try ExecProtocol.frame(ExecProtocol.Kind.hello, json: hello), timeout: job.connectTimeout)
        } catch let error as HelperIOError {
            if case .abandoned = error { throw CancellationError() }
            throw Conversation.Failure(error, phase: "before the handshake", url: job.url)
        }
        let frame: Frame
        do {
            frame = try await helper.receive(idleTimeout: job.connectTimeout)
        } catch let error as HelperIOError {
            if case .abandoned = error { throw CancellationError() }
            throw Conversation.Failure(error, phase: "before the handshake", url: job.url)
        }
        if frame.kind == ExecProtocol.Kind.error {
            let message = try Conversation.decode(ErrorMessage.self, frame, url: job.url)
            throw Conversation.Failure(.protocolError, "refused the handshake: \(TerminalText.escape(message.message))", url: job.url)
        }
        guard frame.kind == ExecProtocol.Kind.hello else {
            throw Conversation.Failure(.protocolError, "answered the handshake with \(frame.kind) instead of HELLO", url: job.url)
        }
        let answer = try Conversation.decode(HelperHello.self, frame, url: job.url)
        guard ExecProtocol.versions.contains(answer.protocol) else {
            let offered = ExecProtocol.versions.map(String.init).joined(separator: ", ")
            throw Conversation.Failure(
                .protocolError, "speaks protocol version \(answer.protocol); this Paperboy speaks version \(offered)", url: job.url)
        }
        if let schemes = answer.schemes, let scheme = job.url.scheme?.lowercased(), !schemes.map({ $0.lowercased() }).contains(scheme) {
            throw Conversation.Failure(
                .protocolError, "serves the schemes \(TerminalText.escape(schemes.joined(separator: ", "))), not '\(scheme)'", url: job.url)
        }
        helper.hello.withLock { $0 = answer }
    }
}

/// One transfer with a helper: `FETCH`, then challenges, `BEGIN`, `DATA`… until `DONE` or `ERROR`.
struct Conversation {
    let job: TransferJob
    let helper: HelperProcess
    let sink: any TransferSink
    let grace: Duration

    private static let nextID = Atomic<Int>(1)

    /// Runs the transfer; returns normally when the helper said `DONE`. The helper is reusable
    /// afterwards. Errors thrown by the sink are rethrown unchanged (the helper is then not reusable).
    func run() async throws -> Bool {
        let id = Self.nextID.add(1, ordering: .relaxed).oldValue
        if job.rangeEnd != nil, helper.hello.withLock({ $0?.capabilities?.contains(ExecProtocol.rangesCapability) }) != true {
            // Declared with `.ranges` by whoever registered the transport, but not by the helper.
            throw Failure(.protocolError, "was asked for a range, but its HELLO does not list the '\(ExecProtocol.rangesCapability)' capability",
                          url: job.url, retryable: false)
        }
        // Only the core's own spelling of a reserved key reaches a helper (`OptionKey`).
        let request = FetchRequest(
            id: id, url: job.url.absoluteString, offset: job.offset, validator: job.validator.map(WireValidator.init),
            headers: job.headers, options: OptionKey.withoutLookAlikes(job.options), connectTimeout: job.connectTimeout.timeInterval,
            idleTimeout: job.idleTimeout.timeInterval, asset: job.assetIdentifier, end: job.rangeEnd)
        try await send(ExecProtocol.frame(ExecProtocol.Kind.fetch, json: request), phase: "before the request", stale: true)

        var frames = TransferFrames(id: id, url: job.url, helperName: helper.name, asksForRange: job.rangeEnd != nil)
        var heardBack = false
        while true {
            if Task.isCancelled { throw CancellationError() }
            let frame: Frame
            do {
                frame = try await helper.receive(idleTimeout: job.idleTimeout)
            } catch let error as HelperIOError {
                if case .abandoned = error { throw CancellationError() }
                let phase = frames.began ? "during the transfer, after \(frames.position) bytes" : "before BEGIN"
                var failure = Failure(error, phase: phase, url: job.url)
                if case .closed = error, !heardBack { failure.staleHelper = true }
                throw failure
            }
            heardBack = true
            switch try frames.accept(frame) {
            case .challenge(let challenge):
                let disposition = await sink.challenge(challenge)
                try await send(ExecProtocol.frame(ExecProtocol.Kind.answer, json: AnswerMessage(id: id, disposition)),
                               phase: "while answering a challenge", stale: false)
            case .begin(let response):
                try sink.begin(response)
            case .data(let payload):
                if !payload.isEmpty { try await sink.write(payload) }
            case .done:
                return true
            }
        }
    }

    private func send(_ frame: Data, phase: String, stale: Bool) async throws {
        do {
            try await helper.send(frame, timeout: job.idleTimeout)
        } catch let error as HelperIOError {
            if case .abandoned = error { throw CancellationError() }
            var failure = Failure(error, phase: phase, url: job.url)
            if case .closed = error { failure.staleHelper = stale }
            throw failure
        }
    }

    static func decode<Message: Decodable>(_ type: Message.Type, _ frame: Frame, url: URL) throws(Failure) -> Message {
        do {
            return try JSONReader("helper \(frame.kind) frame", limits: ExecProtocol.jsonLimits).decode(type, from: frame.payload, using: ExecProtocol.decoder)
        } catch let error as JSONInputError {
            throw Failure(.protocolError, "sent \(frame.kind) JSON out of the limits: \(error.problem)", url: url)
        } catch {
            let text = FrameReader.quote(ArraySlice(frame.payload))
            throw Failure(.protocolError, "sent a \(frame.kind) message that is not valid: \(text)", url: url)
        }
    }

    /// A failed conversation, turned into a ``TransportError`` that names the helper.
    struct Failure: Error {
        var code: TransportError.Code
        /// What the helper did, starting with a verb ("sent DATA before BEGIN").
        var what: String
        var url: URL
        var retryable: Bool
        /// The helper ended the transfer cleanly and can serve another one.
        var reusable = false
        /// The helper was gone before it heard the request (a kept helper that exited while idle).
        var staleHelper = false
        /// An error the helper reported itself with `ERROR`.
        var remote: TransportError?

        init(_ code: TransportError.Code, _ what: String, url: URL, retryable: Bool? = nil) {
            self.code = code
            self.what = what
            self.url = url
            self.retryable = retryable ?? code.isRetryableByDefault
        }

        init(remote: TransportError) {
            self.init(remote.code, remote.message, url: remote.url ?? URL(fileURLWithPath: "/"), retryable: remote.isRetryable)
            self.remote = remote
            reusable = true
        }

        init(_ error: HelperIOError, phase: String, url: URL) {
            switch error {
            case .closed:
                let before = phase.hasPrefix("before")
                self.init(before ? .connectionFailed : .connectionLost, "stopped talking \(phase)", url: url, retryable: !before || phase.contains("BEGIN"))
            case .timedOut(let limit):
                self.init(.timedOut, "sent nothing for \(limit) \(phase); it was stopped", url: url)
            case .abandoned:
                self.init(.cancelled, "was stopped \(phase)", url: url, retryable: false)
            case .garbage(let text):
                self.init(.protocolError, "printed something that is not a protocol frame \(phase): \(text)", url: url, retryable: false)
            case .tooLarge(let kind, let length):
                self.init(.protocolError, "announced a \(kind) frame of \(length) bytes, more than allowed", url: url, retryable: false)
            case .system(let reason):
                self.init(.ioError, "could not be talked to \(phase): \(reason)", url: url)
            }
        }

        /// The error to report: the helper's own, or a description of what went wrong with the
        /// helper's exit status and the end of its stderr.
        func error(describing helper: HelperProcess, grace: Duration) async -> TransportError {
            if let remote { return remote }
            let exit = reusable ? helper.exit : await helper.waitForExit(timeout: .milliseconds(500))
            var message = "transport helper '\(helper.name)' (pid \(helper.pid)) \(what)"
            if let exit {
                message += "; it \(exit)"
                // It exited: its last words are in the pipe, or on their way to the tail.
                await helper.waitForStderrEnd(timeout: .milliseconds(500))
            }
            let tail = helper.stderrTail
            message += tail.isEmpty ? "; it wrote nothing to stderr" : "; its stderr ended with: \(tail)"
            return TransportError(code, message, url: url, isRetryable: retryable)
        }
    }
}
