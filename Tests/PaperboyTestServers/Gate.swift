import Foundation
import PaperboyTesting
import Synchronization

/// A door a test opens: code under test waits at it, the test sees it arrive.
public final class Gate: Sendable {
    private struct State {
        var open = false
        var waiters: [CheckedContinuation<Void, Never>] = []
        var arrivals = 0
    }

    private let state = Mutex(State())

    /// A closed gate.
    public init() {}

    /// How many times someone reached the gate.
    public var arrivals: Int { state.withLock { $0.arrivals } }

    /// Waits until the gate is open.
    public func pass() async {
        await withCheckedContinuation { continuation in
            let open = state.withLock { state -> Bool in
                state.arrivals += 1
                if !state.open { state.waiters.append(continuation) }
                return state.open
            }
            if open { continuation.resume() }
        }
    }

    /// Opens the gate for everyone waiting and everyone to come.
    public func open() {
        let waiters = state.withLock { state in
            state.open = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }
}

/// `randomData` made on a thread of its own (generating data is CPU work kept off the pool).
public func generated(_ count: Int, seed: UInt64) async throws -> Data {
    try await offThePool { randomData(count, seed: seed) }
}
