import Synchronization

/// A function value set and read from any thread: a callback installed once and called often.
///
/// Not a `Mutex` holding the function: `withLock` hands its value over `inout`, and a function
/// value goes in and comes back out reabstracted, wrapped in one more thunk each time
/// (Swift 6.3, debug and release builds alike). A callback read once per event grew a chain of
/// thunks as long as the events were many, and calling it overflowed the stack (a daemon
/// client's reader at 20,000 events; `LockedFunctionTests` reads one 200,000 times). Here the
/// function is held by a constant in a class, and the lock guards only the reference to it.
package final class LockedFunction<Function: Sendable>: Sendable {
    private final class Box: Sendable {
        let function: Function
        init(_ function: Function) { self.function = function }
    }

    private let box: Mutex<Box?>

    /// Holds `function`, or nothing.
    package init(_ function: Function? = nil) {
        box = Mutex(function.map(Box.init))
    }

    /// The function held now, if any.
    package var function: Function? { box.withLock { $0 }?.function }

    /// Replaces the function held (`nil`: none).
    package func set(_ function: Function?) {
        let replacement = function.map(Box.init)
        box.withLock { $0 = replacement }
    }
}
