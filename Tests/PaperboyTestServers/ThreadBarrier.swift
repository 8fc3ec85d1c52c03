import Foundation
import Synchronization

/// Server threads (a ``FaultServer`` handler, a `.holdAfter` hold) wait until `parties` have
/// arrived, or the test releases them, or 60 s pass (a failing client must not hang the suite;
/// ``opened`` then says false): an event, where a sleep would guess.
public final class ThreadBarrier: Sendable {
    private struct State {
        var arrived = 0
        var opened = false
        var released = false
    }

    private let parties: Int
    private let state = Mutex(State())
    private let condition = NSCondition()

    public init(parties: Int) { self.parties = parties }

    /// Whether `parties` arrived.
    public var opened: Bool { state.withLock { $0.opened } }

    public func arrive() {
        condition.lock()
        state.withLock { state in
            state.arrived += 1
            if state.arrived >= parties { state.opened = true }
        }
        condition.broadcast()
        condition.unlock()
    }

    /// Blocks this (server) thread until the barrier opens or is released.
    public func wait() {
        let deadline = Date(timeIntervalSinceNow: 60)
        condition.lock()
        defer { condition.unlock() }
        while !state.withLock({ $0.opened || $0.released }) {
            if !condition.wait(until: deadline) { return }
        }
    }

    public func release() {
        condition.lock()
        state.withLock { $0.released = true }
        condition.broadcast()
        condition.unlock()
    }
}
