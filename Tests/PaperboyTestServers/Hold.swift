import Paperboy
import Synchronization

/// The rule ``HoldingSink`` and ``HoldingTransport`` stop a transfer by: writes are taken until
/// `limit` bytes were, then refused (push-back, as the core's limiter does) until ``release()``.
final class Hold: Sendable {
    private struct State {
        var taken = 0
        var held = false
        var released = false
        /// `whenWritable` callbacks of refused `tryWrite`s.
        var callbacks: [@Sendable () -> Void] = []
        /// Async writes waiting, by number.
        var sleepers: [Int: CheckedContinuation<Void, any Error>] = [:]
        var nextSleeper = 0
        /// Sleepers cancelled before they were stored.
        var cancelled: Set<Int> = []
    }

    private let limit: Int
    private let state = Mutex(State())

    init(after limit: Int) { self.limit = limit }

    /// The bytes taken so far.
    var taken: Int { state.withLock { $0.taken } }
    /// Whether a write was refused and ``release()`` has not been called yet.
    var isHolding: Bool { state.withLock { $0.held && !$0.released } }

    /// Whether a write may be taken now; `false` is a refusal (the transfer is held).
    func mayTake() -> Bool {
        state.withLock { state in
            guard state.released || state.taken < limit else {
                state.held = true
                return false
            }
            return true
        }
    }

    /// Counts `count` bytes taken.
    func took(_ count: Int) { state.withLock { $0.taken += count } }

    /// Calls `callback` once the hold is released (at once when it is).
    func whenReleased(_ callback: @escaping @Sendable () -> Void) {
        let now = state.withLock { state -> Bool in
            if state.released { return true }
            state.callbacks.append(callback)
            return false
        }
        if now { callback() }
    }

    /// Returns once the hold is released; throws `CancellationError` when the task is cancelled
    /// first (as the core's limiter lets a cancelled transfer go).
    func released() async throws {
        let number = state.withLock { state in
            defer { state.nextSleeper += 1 }
            return state.nextSleeper
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let outcome = state.withLock { state -> Result<Void, any Error>? in
                    if state.cancelled.remove(number) != nil { return .failure(CancellationError()) }
                    if state.released { return .success(()) }
                    state.sleepers[number] = continuation
                    return nil
                }
                if let outcome { continuation.resume(with: outcome) }
            }
        } onCancel: {
            let sleeper = state.withLock { state in
                let sleeper = state.sleepers.removeValue(forKey: number)
                if sleeper == nil { state.cancelled.insert(number) }
                return sleeper
            }
            sleeper?.resume(throwing: CancellationError())
        }
    }

    /// Takes every write from now on and lets held writers go on.
    func release() {
        let (callbacks, sleepers) = state.withLock { state in
            state.released = true
            defer {
                state.callbacks = []
                state.sleepers = [:]
            }
            return (state.callbacks, Array(state.sleepers.values))
        }
        for callback in callbacks { callback() }
        for sleeper in sleepers { sleeper.resume() }
    }
}

/// One writer (a sink or a segment) forwarding to the library's through a ``Hold``: it tells a
/// refusal of the hold from one of the library's (its limiter), so that `whenWritable` waits for
/// the one that refused.
final class HeldWriter: Sendable {
    private let hold: Hold
    /// Whether the last refused `tryWrite` was refused by the hold.
    private let heldLast = Atomic(false)

    init(_ hold: Hold) { self.hold = hold }

    func write(_ bytes: UnsafeRawBufferPointer, to write: (UnsafeRawBufferPointer) async throws -> Void) async throws {
        if !hold.mayTake() { try await hold.released() }
        try await write(bytes)
        hold.took(bytes.count)
    }

    func tryWrite(_ bytes: UnsafeRawBufferPointer, to tryWrite: (UnsafeRawBufferPointer) throws -> Bool) rethrows -> Bool {
        let held = !hold.mayTake()
        heldLast.store(held, ordering: .sequentiallyConsistent)
        guard !held, try tryWrite(bytes) else { return false }
        hold.took(bytes.count)
        return true
    }

    func whenWritable(_ callback: @escaping @Sendable () -> Void, else whenWritable: (@escaping @Sendable () -> Void) -> Void) {
        if heldLast.load(ordering: .sequentiallyConsistent) { hold.whenReleased(callback) } else { whenWritable(callback) }
    }
}
