import Dispatch
import Foundation
import Paperboy
import Synchronization

/// A ``TransferSink`` whose first write waits until the test opens its gate, then takes every
/// write at once and keeps the bytes in memory.
///
/// A test holds a transport's writer at a known point (its first write started, seen in
/// ``calls``), acts there (cancels the transfer), then lets it go on: no sleep guesses when
/// the writer got there. The first write blocks its thread, so it is for transports that write
/// from threads of their own (write-behind); a test opens the gate before it ends.
///
/// A first write from the HTTP transport's curl thread is not held: that thread is shared by
/// every HTTP transfer in the process, and the transport writes on it when every write-behind
/// slot is taken (by other tests, in a parallel run). Holding it stopped every HTTP test for the
/// 60 s of a wait budget, and the held transfer itself, whose bytes curl could not read.
public final class GatedSink: TransferSink, Sendable {
    private let gate = DispatchSemaphore(value: 0)
    private let state = Mutex<(data: Data, calls: Int, isOpen: Bool)>((Data(), 0, false))
    private let answer: @Sendable (AuthChallenge) -> AuthChallengeDisposition

    /// Creates a closed gate; `answer` answers challenges.
    public init(answer: @escaping @Sendable (AuthChallenge) -> AuthChallengeDisposition = { _ in .performDefaultHandling }) {
        self.answer = answer
    }

    /// The bytes taken so far.
    public var data: Data { state.withLock { $0.data } }
    /// Writes started so far (the first one may still wait at the gate).
    public var calls: Int { state.withLock { $0.calls } }

    /// Lets the first write, and every later one, through.
    public func open() {
        let opens = state.withLock { state -> Bool in
            defer { state.isOpen = true }
            return !state.isOpen
        }
        if opens { gate.signal() }
    }

    public func begin(_ response: TransferResponse) throws {}

    public func write(_ bytes: UnsafeRawBufferPointer) async throws { _ = tryWrite(bytes) }

    public func tryWrite(_ bytes: UnsafeRawBufferPointer) -> Bool {
        let first = state.withLock { state -> Bool in
            state.calls += 1
            return state.calls == 1
        }
        if first, !Self.onTheCurlThread { gate.wait() }
        state.withLock { $0.data.append(contentsOf: bytes) }
        return true
    }

    public func whenWritable(_ callback: @escaping @Sendable () -> Void) { callback() }

    /// Whether the caller is PaperboyHTTP's curl thread (named `paperboy-curl`; Linux names it in
    /// /proc, and Glibc's Swift module does not show `pthread_getname_np`).
    private static var onTheCurlThread: Bool {
        let name = try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)
        return name?.trimmingCharacters(in: .newlines) == "paperboy-curl"
    }

    public func challenge(_ challenge: AuthChallenge) async -> AuthChallengeDisposition { answer(challenge) }
}
