import Foundation

/// A wait in a test that did not see what it waited for before its deadline.
public struct TimedOut: Error, CustomStringConvertible, Sendable {
    /// What was awaited and what was seen instead.
    public let description: String

    /// An error with `description`.
    public init(_ description: String) { self.description = description }
}

/// Waits until `condition` holds, checking it every few milliseconds, for at most `timeout` of
/// its own turns (a ``WaitBudget``).
///
/// The deadline only stops a test that would otherwise hang: it is generous (60 s) so that a
/// loaded machine never trips it, and nothing is decided by it. It is counted in the waiter's
/// turns, so a process that is not scheduled for a while does not use it up. Prefer awaiting an
/// event (a delegate's end, a ``TestClock`` sleeper) where the code under test offers one.
///
/// - Parameters:
///   - what: what is awaited, for the failure's message.
///   - timeout: the deadline, a ``WaitBudget``.
///   - seen: a description of the state when the deadline passed, for the failure's message.
/// - Throws: ``TimedOut`` naming `what` and `seen()`, or `CancellationError`.
public func eventually(
    _ what: String, timeout: Duration = .seconds(60), seen: @autoclosure () -> String = "",
    _ condition: () async throws -> Bool
) async throws {
    var budget = WaitBudget(timeout)
    while try await !condition() {
        if budget.isSpent {
            let state = seen()
            throw TimedOut("timed out after \(budget) waiting for \(what)" + (state.isEmpty ? "" : "; saw \(state)"))
        }
        try await budget.pause()
    }
}
