import Synchronization

/// Fans library events out to every ``Library/events()`` subscriber.
///
/// Telling costs nothing while nobody listens (``hasSubscribers`` is one atomic load), and one
/// lock, a copy of the subscribers and a `yield` per subscriber when someone does.
final class EventBroadcaster: Sendable {
    private let subscribers = Mutex<[Int: AsyncStream<LibraryEvent>.Continuation]>([:])
    private let nextKey = Mutex<Int>(0)
    /// The number of subscribers, read without the lock.
    private let count = Atomic<Int>(0)

    var hasSubscribers: Bool { count.load(ordering: .relaxed) > 0 }

    func subscribe() -> AsyncStream<LibraryEvent> {
        let key = nextKey.withLock { key in
            key += 1
            return key
        }
        let (stream, continuation) = AsyncStream.makeStream(of: LibraryEvent.self)
        continuation.onTermination = { [weak self] _ in
            guard let self else { return }
            subscribers.withLock { subscribers in
                if subscribers.removeValue(forKey: key) != nil { count.subtract(1, ordering: .relaxed) }
            }
        }
        subscribers.withLock { subscribers in
            subscribers[key] = continuation
            count.add(1, ordering: .relaxed)
        }
        return stream
    }

    func send(_ event: LibraryEvent) {
        // Never under the lock: a yield that resumes a waiting subscriber takes that task's
        // status lock, and cancelling that task holds its status lock while the stream's
        // termination handler (``subscribe()``) takes ours. Under the lock the two deadlocked:
        // a daemon stopped (DaemonServer.stop cancels its events task) while a delivery was
        // told hung after 'stopping' (DaemonBandwidthTests' SIGHUP test, killed after 60 s).
        for continuation in subscribers.withLock({ Array($0.values) }) { continuation.yield(event) }
    }

    func finish() {
        for continuation in subscribers.withLock({ Array($0.values) }) {
            continuation.finish()
        }
    }
}
