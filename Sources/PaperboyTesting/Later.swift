import Dispatch

/// Runs `body` once `delay` has passed, on a queue of its own: for a test sink that stands for a
/// slow disk or a paused reader.
///
/// Not `DispatchQueue.global()`: on Linux its threads and its queue are the cooperative pool's,
/// so a timer firing there waits behind every task queued before it, and a sink's 400 ms pause
/// became seconds on a busy machine. This queue gets a thread when it has work.
public func runLater(after delay: Duration, _ body: @escaping @Sendable () -> Void) {
    let (seconds, attoseconds) = delay.components
    let nanoseconds = max(0, Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000))
    laterQueue.asyncAfter(deadline: .now() + .nanoseconds(nanoseconds), execute: body)
}

private let laterQueue = DispatchQueue(label: "paperboy-testing-later")
