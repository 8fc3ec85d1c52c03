import Synchronization

/// Opens once the store has committed an update; until then, the bytes that update makes
/// resumable are held back from the partial file (see ``PartialFileSink``).
///
/// Nobody blocks a thread on it: a transport's thread (libcurl's, shared by every transfer) is
/// told to pause and called back when it opens; async callers suspend.
final class CommitGate: Sendable {
    private let opened = Atomic<Bool>(false)
    /// Told when the gate opens; `nil` once it is open.
    private let waiting = Mutex<[@Sendable () -> Void]?>([])

    init() {}

    /// Whether the update is committed (or the store gave up on it, see ``open()``).
    var isOpen: Bool { opened.load(ordering: .acquiring) }

    /// Opens the gate and calls everyone waiting; opening an open gate does nothing.
    func open() {
        let callbacks = waiting.withLock { waiting -> [@Sendable () -> Void] in
            defer { waiting = nil }
            opened.store(true, ordering: .releasing)
            return waiting ?? []
        }
        for callback in callbacks { callback() }
    }

    /// Calls `callback` once the gate is open: at once if it is, otherwise from the thread
    /// that opens it.
    func whenOpen(_ callback: @escaping @Sendable () -> Void) {
        let now = waiting.withLock { waiting -> Bool in
            guard waiting != nil else { return true }
            waiting!.append(callback)
            return false
        }
        if now { callback() }
    }

    /// Suspends until the gate is open.
    func wait() async {
        guard !isOpen else { return }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            whenOpen { continuation.resume() }
        }
    }
}
