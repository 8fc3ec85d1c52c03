import Synchronization

/// A fixed set of locks, one chosen by a key's hash: work for one key runs one at a time, work
/// for different keys mostly in parallel, in memory that does not grow with the keys.
///
/// Hold no other lock that work under a striped lock may wait for: two keys can share a lock.
package final class StripedLocks: Sendable {
    private final class Stripe: Sendable {
        let lock = Mutex<Void>(())
        /// Callers of ``StripedLocks/withLock(for:_:)`` that have not got this lock yet.
        let waiting = Atomic<Int>(0)
    }

    private let stripes: [Stripe]

    /// - Parameter count: how many locks (at least one).
    package init(count: Int = 16) {
        stripes = (0..<max(1, count)).map { _ in Stripe() }
    }

    private func stripe(_ key: some Hashable) -> Stripe {
        stripes[Int(UInt(bitPattern: key.hashValue) % UInt(stripes.count))]
    }

    /// Runs `body` holding the lock of `key`.
    package func withLock<Key: Hashable, R>(for key: Key, _ body: () throws -> R) rethrows -> R {
        let stripe = stripe(key)
        stripe.waiting.add(1, ordering: .relaxed)
        return try stripe.lock.withLock { _ in
            stripe.waiting.subtract(1, ordering: .relaxed)
            return try body()
        }
    }

    /// How many callers wait for the lock of `key` now (tests watch work queue up behind it).
    package func waiters(for key: some Hashable) -> Int {
        stripe(key).waiting.load(ordering: .relaxed)
    }
}
