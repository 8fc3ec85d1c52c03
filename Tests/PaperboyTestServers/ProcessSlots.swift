import Foundation
import Synchronization

/// How many `paperboy` processes the tests start at once: a test waits (suspended, off the
/// cooperative pool's threads) for a slot before it starts one, and gives it back once the
/// process has done its start-up work (a daemon listening, a command ended).
///
/// Without it, every CLI test starts its daemon and commands as the run begins: about 60 debug
/// processes at once on 2 cores, which left the test process itself so little CPU that tests of
/// other suites ran past their time limits (`ChunkReuseTests`, `UnpackLimitsTests`, 60 s, in a
/// run where nothing finished between 12 s and 55 s). In a queue, the same work is done in the
/// same time, and everything else keeps its share of the machine.
public final class ProcessSlots: Sendable {
    /// The slots of the test process: twice the cores.
    public static let shared = ProcessSlots(count: max(2, 2 * ProcessInfo.processInfo.activeProcessorCount))

    private struct State {
        var free: Int
        var waiting: [(id: UInt64, continuation: CheckedContinuation<Void, any Error>)] = []
        var nextID: UInt64 = 0
    }

    private let state: Mutex<State>

    /// Slots for `count` processes at once.
    public init(count: Int) {
        state = Mutex(State(free: count))
    }

    /// Slots free now.
    public var free: Int { state.withLock { $0.free } }

    /// Tasks waiting for a slot now.
    public var waiters: Int { state.withLock { $0.waiting.count } }

    /// Waits for a slot, first come first served.
    ///
    /// - Throws: `CancellationError` when the task is cancelled while it waits (no slot is then held).
    public func acquire() async throws {
        let id = state.withLock { state -> UInt64 in
            state.nextID += 1
            return state.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let granted = state.withLock { state -> Bool in
                    guard state.free > 0, state.waiting.isEmpty else {
                        state.waiting.append((id, continuation))
                        return false
                    }
                    state.free -= 1
                    return true
                }
                if granted { continuation.resume() }
            }
        } onCancel: {
            let waiter = state.withLock { state -> CheckedContinuation<Void, any Error>? in
                guard let index = state.waiting.firstIndex(where: { $0.id == id }) else { return nil }
                return state.waiting.remove(at: index).continuation
            }
            waiter?.resume(throwing: CancellationError())
        }
    }

    /// Gives a slot back: to the first waiter, or to the free ones.
    public func release() {
        let next = state.withLock { state -> CheckedContinuation<Void, any Error>? in
            guard !state.waiting.isEmpty else {
                state.free += 1
                return nil
            }
            return state.waiting.removeFirst().continuation
        }
        next?.resume()
    }

    /// Runs `body` holding a slot.
    public func holding<T>(_ body: () async throws -> T) async throws -> T {
        try await acquire()
        defer { release() }
        return try await body()
    }
}
