import Synchronization

/// Fans library events out to every ``Library/events()`` subscriber.
final class EventBroadcaster: Sendable {
    private let subscribers = Mutex<[Int: AsyncStream<LibraryEvent>.Continuation]>([:])
    private let nextKey = Mutex<Int>(0)

    var hasSubscribers: Bool { subscribers.withLock { !$0.isEmpty } }

    func subscribe() -> AsyncStream<LibraryEvent> {
        let key = nextKey.withLock { key in
            key += 1
            return key
        }
        let (stream, continuation) = AsyncStream.makeStream(of: LibraryEvent.self)
        continuation.onTermination = { [weak self] _ in
            _ = self?.subscribers.withLock { $0.removeValue(forKey: key) }
        }
        subscribers.withLock { $0[key] = continuation }
        return stream
    }

    func send(_ event: LibraryEvent) {
        for continuation in subscribers.withLock({ Array($0.values) }) {
            continuation.yield(event)
        }
    }

    func finish() {
        for continuation in subscribers.withLock({ Array($0.values) }) {
            continuation.finish()
        }
    }
}
