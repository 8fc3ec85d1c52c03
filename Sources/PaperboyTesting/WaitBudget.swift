import Foundation

/// The guard of a test's wait, counted in the waiter's own turns rather than on the wall clock.
///
/// A guard only stops a test that would hang. On a loaded machine the whole process can go many
/// seconds without running: the cooperative pool's threads are runnable but get a sliver of a
/// core, and every task waits in the pool's queue behind the others (measured in a full suite at
/// load 19: a task waited 26 s before its first instruction). A deadline on the wall clock then
/// passes while the code under test never ran, and a correct transport fails. So the waiter
/// sleeps in short turns and counts each turn's time, but at most ten turns' worth: a turn that
/// came back later was held up by the machine (and so, as far as anyone can tell, was the code
/// under test), not by the code. Idle, the budget is spent in wall time; a real hang still spends
/// it, only later when the process is starved.
public struct WaitBudget: Sendable, CustomStringConvertible {
    /// How long one turn sleeps: `eventually`'s poll period (5 ms) by default.
    public let turn: Duration
    /// The time to spend.
    public let limit: Duration
    /// The time counted so far.
    public private(set) var spent: Duration = .zero
    private let started: ContinuousClock.Instant
    private var turnStarted: ContinuousClock.Instant

    /// A budget of `limit`, counted from now in turns of `turn`.
    public init(_ limit: Duration, turn: Duration = .milliseconds(5)) {
        self.limit = limit
        self.turn = turn
        started = .now
        turnStarted = started
    }

    /// Whether the whole limit is spent.
    public var isSpent: Bool { spent >= limit }

    /// Time on the wall clock since the budget was made.
    public var wallTime: Duration { ContinuousClock.now - started }

    /// "30 s", and the wall time when the machine stretched it: "30 s (74.2 s on the wall clock)".
    public var description: String {
        let wall = wallTime
        let stretched = wall > limit + .seconds(1)
        return "\(Self.seconds(limit))" + (stretched ? " (\(Self.seconds(wall)) on the wall clock)" : "")
    }

    /// Sleeps one turn and counts the time since the previous turn ended, at most ten turns.
    ///
    /// - Throws: `CancellationError` when the task is cancelled.
    public mutating func pause() async throws {
        try await Task.sleep(for: turn)
        let now = ContinuousClock.now
        spent += min(now - turnStarted, turn * 10)
        turnStarted = now
    }

    /// Returns once the whole limit is spent, in turns of 50 ms (nothing is checked between
    /// them): the guard timer of an awaited event.
    ///
    /// - Throws: `CancellationError` when the task is cancelled (the event came first).
    public static func spend(_ limit: Duration) async throws {
        var budget = WaitBudget(limit, turn: .milliseconds(50))
        while !budget.isSpent { try await budget.pause() }
    }

    private static func seconds(_ duration: Duration) -> String {
        let (whole, attoseconds) = duration.components
        let tenths = Int(attoseconds / 100_000_000_000_000_000)
        return tenths == 0 ? "\(whole) s" : "\(whole).\(tenths) s"
    }
}
