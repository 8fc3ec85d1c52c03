#if canImport(Glibc)
import Glibc
#endif
import CPaperboySSH2
import Foundation
import Paperboy
import Synchronization

/// One SSH connection (socket, libssh2 session, SFTP channel) and the dedicated thread that
/// drives it, shared by every transfer from the same host, user and known_hosts file.
///
/// libssh2 runs non-blocking. Work is submitted as ``Operation``s: the session's thread calls
/// each operation's step until it is done, and when every operation would block it waits in
/// `poll(2)` on the socket (in the directions libssh2 asks for) and on an `eventfd` that other
/// threads use to hand over new work, cancellations and "the sink is writable again". Only
/// this thread touches libssh2 handles; async code on the cooperative pool awaits results.
final class SSHSession: @unchecked Sendable {
    /// What a session is shared for.
    struct Key: Hashable, Sendable {
        var host: String
        var port: Int
        var user: String
        var knownHosts: String
        /// 0 for the connection transfers share; 1 for the second one reading a large file.
        var lane = 0
    }

    /// What an operation's step did.
    enum Step {
        /// The operation is over (it resumed its continuation).
        case finished
        /// libssh2 would block: wait for the socket.
        case blocked
        /// More work is ready; the step returned to let other operations run.
        case yielded
        /// Waiting for the sink; ``resume(_:)`` wakes it.
        case paused
    }

    /// Work driven by the session thread.
    final class Operation: @unchecked Sendable {
        let id: Int
        /// Runs on the session thread; must not block.
        var step: () -> Step = { .finished }
        /// Ends the operation with an error (cancellation, timeout, lost connection); called once.
        var fail: (any Error) -> Void = { _ in }
        /// Called when `fail` ended it, on the session thread (closing handles, for example).
        let idleTimeout: Duration
        var lastProgress = ContinuousClock.now
        var isPaused = false
        /// Runs alone among exclusive operations. libssh2 keeps the state of a pending channel
        /// open, SFTP open, stat or close in the session or SFTP structure, not per call: two such
        /// calls in flight at once corrupt each other. Reads on distinct channels may interleave.
        let isExclusive: Bool

        init(id: Int, idleTimeout: Duration, isExclusive: Bool = true) {
            self.id = id
            self.idleTimeout = idleTimeout
            self.isExclusive = isExclusive
        }
    }

    private enum Command {
        case add(Operation)
        case cancel(Int)
        case resume(Int)
        case close
    }

    private struct Shared {
        var commands: [Command] = []
        var users = 0
        var closed = false
        var lastUse = ContinuousClock.now
        /// The thread has ended: commands are no longer read.
        var finished = false
    }

    let key: Key
    /// The URL shown in errors (scheme, host and port).
    let origin: URL
    private let shared = Mutex(Shared())
    private let wakeFD: Int32
    private let idleLifetime: Duration
    private let nextID = Atomic<Int>(1)

    // Session thread only.
    private(set) var socket: Int32 = -1
    private(set) var raw: OpaquePointer?
    private let context: UnsafeMutablePointer<paperboy_ssh_context>
    private var operations: [Operation] = []
    private var cancelledEarly: Set<Int> = []
    private var isDead = false
    /// Answers keyboard-interactive prompts during an authentication call.
    var keyboardInteractive: (([String]) -> [String])?

    /// Transfers using the session now.
    var userCount: Int { shared.withLock { $0.users } }

    /// Creates a session and starts its thread. Nothing is connected yet.
    init(key: Key, idleLifetime: Duration) {
        self.key = key
        self.idleLifetime = idleLifetime
        let host = key.host.contains(":") ? "[\(key.host)]" : key.host
        origin = URL(string: "sftp://\(host):\(key.port)/") ?? URL(string: "sftp://invalid/")!
        wakeFD = paperboy_eventfd()
        context = .allocate(capacity: 1)
        context.initialize(to: paperboy_ssh_context(received: 0, budget: -1, coalesce: 0, held: 0, owner: nil, kbdint: sshKeyboardInteractiveCallback))
        context.pointee.owner = Unmanaged.passUnretained(self).toOpaque()
        shared.withLock { $0.users = 1 }
        // The thread keeps the session alive until it has closed the connection.
        let thread = Thread { [self] in run() }
        thread.name = "paperboy-ssh \(key.host):\(key.port)"
        thread.start()
    }

    deinit {
        context.deallocate()
        close(wakeFD)
    }

    // MARK: Sharing

    /// Takes the session for one more transfer, unless it is closed or closing.
    func acquire() -> Bool {
        shared.withLock { state in
            guard !state.closed else { return false }
            state.users += 1
            return true
        }
    }

    /// Gives the session back; it closes itself after ``idleLifetime`` without users.
    func release() {
        shared.withLock { state in
            state.users -= 1
            state.lastUse = .now
        }
        wake()
    }

    /// Closes the connection now (after a failed set-up, for example).
    func shutDown() {
        submit(.close)
    }

    // MARK: Running work

    /// Runs `body` on the session thread until it returns a value (`nil` means "would block,
    /// call me again when the socket is ready").
    ///
    /// - Throws: what `body` throws, `CancellationError`, or a ``TransportError`` for a timeout
    ///   or a connection that dropped meanwhile.
    func run<T: Sendable>(idleTimeout: Duration, _ body: @escaping () throws -> T?) async throws -> T {
        try await perform(idleTimeout: idleTimeout) { operation, continuation in
            operation.step = {
                do {
                    guard let value = try body() else { return .blocked }
                    continuation.resume(returning: value)
                } catch {
                    continuation.resume(throwing: error)
                }
                return .finished
            }
        }
    }

    /// Runs an operation prepared by `prepare` (which sets its step and resumes the continuation
    /// when the step finishes).
    func perform<T: Sendable>(
        idleTimeout: Duration, isExclusive: Bool = true,
        _ prepare: (Operation, CheckedContinuation<T, any Error>) -> Void
    ) async throws -> T {
        let id = nextID.wrappingAdd(1, ordering: .relaxed).oldValue
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
                let operation = Operation(id: id, idleTimeout: idleTimeout, isExclusive: isExclusive)
                operation.fail = { continuation.resume(throwing: $0) }
                prepare(operation, continuation)
                submit(.add(operation))
            }
        } onCancel: {
            submit(.cancel(id))
        }
    }

    /// Runs `step` on the session thread, not cancelled with the caller's task (closing a handle
    /// after a cancelled transfer, for example); `onFailure` runs instead if the connection is
    /// lost or the step times out.
    func enqueue(idleTimeout: Duration, onFailure: @escaping (any Error) -> Void = { _ in }, _ step: @escaping () -> Step) {
        let operation = Operation(id: nextID.wrappingAdd(1, ordering: .relaxed).oldValue, idleTimeout: idleTimeout)
        operation.step = step
        operation.fail = onFailure
        submit(.add(operation))
    }

    /// Wakes a paused operation (its sink accepts bytes again). Any thread.
    func resume(_ operation: Operation) {
        submit(.resume(operation.id))
    }

    private func submit(_ command: Command) {
        let accepted = shared.withLock { state -> Bool in
            guard !state.finished else { return false }
            state.commands.append(command)
            return true
        }
        if accepted {
            wake()
        } else if case .add(let operation) = command {
            operation.fail(lostError("the connection was closed"))
        }
    }

    private func wake() {
        var one: UInt64 = 1
        _ = write(wakeFD, &one, 8)
    }

    // MARK: Connecting (session thread)

    /// Opens the TCP connection (with `TCP_NODELAY`) and creates the libssh2 session; blocking,
    /// but only ever called from a step, on this session's own thread.
    func connect(timeout: Duration) throws {
        let place = "\(key.host):\(key.port)"
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_family = AF_UNSPEC
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(key.host, String(key.port), &hints, &list)
        guard status == 0, let list else {
            throw TransportError(.connectionFailed, "cannot resolve \(key.host): \(String(cString: gai_strerror(status)))", url: origin)
        }
        defer { freeaddrinfo(list) }
        let deadline = ContinuousClock.now + timeout
        var lastError = "no address"
        var entry: UnsafeMutablePointer<addrinfo>? = list
        while let current = entry {
            entry = current.pointee.ai_next
            let fd = Glibc.socket(current.pointee.ai_family, current.pointee.ai_socktype | Int32(SOCK_NONBLOCK.rawValue | SOCK_CLOEXEC.rawValue), current.pointee.ai_protocol)
            guard fd >= 0 else { lastError = SystemFailure.reason(); continue }
            if Glibc.connect(fd, current.pointee.ai_addr, current.pointee.ai_addrlen) != 0, errno != EINPROGRESS {
                lastError = SystemFailure.reason()
                close(fd)
                continue
            }
            var poller = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
            let remaining = max(0, (deadline - .now).milliseconds)
            if poll(&poller, 1, Int32(clamping: remaining)) != 1 {
                lastError = "timed out after \(timeout)"
                close(fd)
                if ContinuousClock.now >= deadline {
                    throw TransportError(.timedOut, "cannot connect to \(place): timed out after \(timeout)", url: origin)
                }
                continue
            }
            var failure: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &failure, &length)
            guard failure == 0 else {
                lastError = SystemFailure.reason(failure)
                close(fd)
                continue
            }
            // libssh2 leaves Nagle on; with it, pipelined SFTP reads run 5–10 times slower.
            var on: Int32 = 1
            setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &on, socklen_t(MemoryLayout<Int32>.size))
            setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, socklen_t(MemoryLayout<Int32>.size))
            socket = fd
            break
        }
        guard socket >= 0 else {
            throw TransportError(.connectionFailed, "cannot connect to \(place): \(lastError)", url: origin)
        }
        guard let session = paperboy_session_init(context) else {
            throw TransportError(.ioError, "libssh2 could not create a session (out of memory)", url: origin)
        }
        libssh2_session_set_blocking(session, 0)
        Self.preferFastSecureMethods(session)
        raw = session
    }

    /// Ciphers and MACs offered, fastest first, weak ones left out.
    ///
    /// libssh2 1.10 has no AES-GCM or chacha20-poly1305. AES-CTR runs on AES-NI; libssh2 decrypts
    /// one 16-byte block per OpenSSL call, so the key size matters little, and aes128 comes first.
    /// hmac-sha2-256 uses the CPU's SHA extensions where present. Left out, unlike libssh2's own
    /// list: arcfour, blowfish, cast128 and 3des (weak or 64-bit blocks), hmac-md5 and
    /// hmac-ripemd160. CBC modes and hmac-sha1 stay, last, for old servers (neither is broken
    /// as used by SSH; OpenSSH still accepts them).
    static let cipherPreference = "aes128-ctr,aes192-ctr,aes256-ctr,aes256-cbc,aes192-cbc,aes128-cbc"
    static let macPreference = "hmac-sha2-256,hmac-sha2-512,hmac-sha1"

    private static func preferFastSecureMethods(_ session: OpaquePointer) {
        for method in [LIBSSH2_METHOD_CRYPT_CS, LIBSSH2_METHOD_CRYPT_SC] {
            _ = libssh2_session_method_pref(session, method, cipherPreference)
        }
        for method in [LIBSSH2_METHOD_MAC_CS, LIBSSH2_METHOD_MAC_SC] {
            _ = libssh2_session_method_pref(session, method, macPreference)
        }
    }

    /// Runs `body` (libssh2 calls) with at most `limit` bytes taken from the socket; past that,
    /// libssh2 sees "would block". Session thread only.
    ///
    /// libssh2 decrypts everything the socket holds into queued packets before it hands out any
    /// channel data. With megabytes of SFTP reads in flight, that queue (allocated on the
    /// session thread) grew to the whole read-ahead; with a limit, answers wait in the kernel's
    /// socket buffer instead, and the process holds about `limit` bytes of them.
    ///
    /// - Returns: what `body` returned, and whether the limit was reached: a "would block"
    ///   from libssh2 then means "call again", not "wait for the socket".
    func withReceiveLimit<T>(_ limit: Int, _ body: () -> T) -> (result: T, limitReached: Bool) {
        context.pointee.budget = Int64(limit)
        defer { context.pointee.budget = -1 }
        let result = body()
        return (result, context.pointee.budget == 0)
    }

    /// Bytes read from the socket so far.
    private var received: UInt64 { context.pointee.received }

    // MARK: The session thread

    private func run() {
        while true {
            let (commands, users, lastUse, closing) = shared.withLock { state in
                defer { state.commands.removeAll(keepingCapacity: true) }
                return (state.commands, state.users, state.lastUse, state.closed)
            }
            var shouldClose = closing
            for command in commands {
                switch command {
                case .add(let operation):
                    if isDead || cancelledEarly.remove(operation.id) != nil {
                        operation.fail(isDead ? lostError("the connection was closed") : CancellationError())
                    } else {
                        operation.lastProgress = .now
                        operations.append(operation)
                    }
                case .cancel(let id):
                    if let index = operations.firstIndex(where: { $0.id == id }) {
                        operations.remove(at: index).fail(CancellationError())
                    } else {
                        cancelledEarly.insert(id)
                    }
                case .resume(let id):
                    if let operation = operations.first(where: { $0.id == id }) {
                        operation.isPaused = false
                        operation.lastProgress = .now
                    }
                case .close:
                    shouldClose = true
                }
            }
            if shouldClose || isDead {
                for operation in operations { operation.fail(lostError("the connection was closed")) }
                operations.removeAll()
                finishThread()
                return
            }

            // Steps until a whole round neither finishes work nor reads from the socket: libssh2
            // may queue one handle's packets while serving another, and poll cannot see those.
            var needsAnotherRound = false
            let before = received
            var index = 0
            var exclusiveRan = false
            // Packets of this round leave together (see `flushHeldPackets`).
            context.pointee.coalesce = 1
            defer { context.pointee.coalesce = 0 }
            while index < operations.count {
                let operation = operations[index]
                if operation.isPaused { index += 1; continue }
                if operation.isExclusive {
                    // Only the oldest exclusive operation runs until it finishes.
                    if exclusiveRan { index += 1; continue }
                    exclusiveRan = true
                }
                switch operation.step() {
                case .finished:
                    operations.remove(at: index)
                    needsAnotherRound = true
                    continue
                case .yielded:
                    operation.lastProgress = .now
                    needsAnotherRound = true
                case .paused:
                    operation.isPaused = true
                    operation.lastProgress = .now
                case .blocked:
                    break
                }
                index += 1
            }
            if received != before { needsAnotherRound = true }
            if needsAnotherRound {
                // Held packets go out once a few have gathered, so that a stream of answers
                // never starves the server of requests; and always before waiting, below.
                if context.pointee.held >= Self.heldPacketsLimit { flushHeldPackets() }
                continue
            }
            flushHeldPackets()

            let now = ContinuousClock.now
            var timeout = Duration.seconds(1)
            // A paused operation waits for local work (the sink's back-pressure, the file
            // writes draining), not for the server: its idle clock restarts when it resumes.
            for operation in operations where !operation.isPaused {
                let left = operation.lastProgress + operation.idleTimeout - now
                if left <= .zero {
                    operations.removeAll { $0 === operation }
                    operation.fail(TransportError(.timedOut, "\(origin.redactedString) sent nothing for \(operation.idleTimeout)", url: origin))
                } else {
                    timeout = min(timeout, left)
                }
            }
            if operations.isEmpty, users == 0 {
                let left = lastUse + idleLifetime - now
                if left <= .zero {
                    let closes = shared.withLock { state -> Bool in
                        guard state.users == 0, state.commands.isEmpty else { return false }
                        state.closed = true
                        return true
                    }
                    if closes {
                        finishThread()
                        return
                    }
                    continue
                }
                timeout = min(timeout, left)
            }
            waitForEvents(timeout: timeout, watchingSocket: operations.contains { !$0.isPaused })
        }
    }

    /// Packets held back (MSG_MORE) before they are pushed out: SFTP read requests are about
    /// 100 bytes each, so 16 fill a fraction of one segment.
    static let heldPacketsLimit: Int32 = 16

    /// Sends the packets the rounds held back (MSG_MORE): one segment for many SFTP read
    /// requests instead of one each, fewer wake-ups for the server too.
    private func flushHeldPackets() {
        guard socket >= 0 else { return }
        paperboy_ssh_flush(socket, context)
    }

    private func waitForEvents(timeout: Duration, watchingSocket: Bool) {
        var fds = [pollfd(fd: wakeFD, events: Int16(POLLIN), revents: 0)]
        if socket >= 0, let raw {
            var events: Int16 = 0
            if watchingSocket {
                let directions = libssh2_session_block_directions(raw)
                if directions & LIBSSH2_SESSION_BLOCK_INBOUND != 0 { events |= Int16(POLLIN) }
                if directions & LIBSSH2_SESSION_BLOCK_OUTBOUND != 0 { events |= Int16(POLLOUT) }
                if events == 0 { events = Int16(POLLIN) }
            } else if operations.isEmpty {
                // Idle: notice a server that hangs up.
                events = PAPERBOY_POLLRDHUP
            }
            fds.append(pollfd(fd: socket, events: events, revents: 0))
        }
        let milliseconds = Int32(clamping: max(1, timeout.milliseconds))
        _ = poll(&fds, nfds_t(fds.count), milliseconds)
        if fds[0].revents != 0 {
            var value: UInt64 = 0
            _ = read(wakeFD, &value, 8)
        }
        if fds.count > 1, fds[1].revents & (PAPERBOY_POLLRDHUP | Int16(POLLHUP | POLLERR)) != 0 {
            markDead()
        }
    }

    /// Marks the connection as gone; its operations fail with a retryable error.
    func markDead() {
        guard !isDead else { return }
        isDead = true
        shared.withLock { $0.closed = true }
    }

    private func lostError(_ reason: String) -> TransportError {
        TransportError(.connectionLost, "SSH connection to \(key.host):\(key.port) lost: \(reason)", url: origin)
    }

    private func finishThread() {
        // The goodbye goes out at once, with anything still held back (see `flushHeldPackets`).
        context.pointee.coalesce = 0
        if let raw {
            if !isDead {
                // Best effort: non-blocking, so a full socket simply drops the goodbye.
                _ = paperboy_session_disconnect(raw, "Paperboy is done")
            }
            libssh2_session_free(raw)
        }
        raw = nil
        if socket >= 0 { close(socket) }
        socket = -1
        let pending = shared.withLock { state -> [Command] in
            state.closed = true
            state.finished = true
            defer { state.commands.removeAll() }
            return state.commands
        }
        for case .add(let operation) in pending { operation.fail(lostError("the connection was closed")) }
    }
}

/// Keyboard-interactive prompts, called by libssh2 on the session thread during authentication.
let sshKeyboardInteractiveCallback: paperboy_kbdint_function = { owner, count, prompts, responses in
    guard let owner, let prompts, let responses, count > 0 else { return }
    let session = Unmanaged<SSHSession>.fromOpaque(owner).takeUnretainedValue()
    let texts = (0..<Int(count)).map { index -> String in
        let prompt = prompts[index]
        guard let text = prompt.text else { return "" }
        return String(decoding: UnsafeRawBufferPointer(start: text, count: Int(prompt.length)), as: UTF8.self)
    }
    let answers = session.keyboardInteractive?(texts) ?? []
    for index in 0..<Int(count) {
        let answer = index < answers.count ? answers[index] : ""
        responses[index].text = paperboy_strdup(answer)
        responses[index].length = UInt32(answer.utf8.count)
    }
}

extension Duration {
    /// Whole milliseconds, rounded down.
    var milliseconds: Int64 {
        components.seconds * 1000 + components.attoseconds / 1_000_000_000_000_000
    }
}
