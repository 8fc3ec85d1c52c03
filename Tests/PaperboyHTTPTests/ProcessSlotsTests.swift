import Foundation
import PaperboyTestServers
import PaperboyTesting
import Synchronization
import Testing

/// The slots that bound how many `paperboy` processes the tests start at once.
@Suite("Process slots", .timeLimit(.minutes(1)))
struct ProcessSlotsTests {
    /// The order waiters got their slot in.
    final class Order: Sendable {
        private let seen = Mutex<[Int]>([])
        func append(_ number: Int) { seen.withLock { $0.append(number) } }
        var numbers: [Int] { seen.withLock { $0 } }
    }

    @Test func noMoreThanTheSlotsAreHeldAndWaitersGoInTheOrderTheyCame() async throws {
        let slots = ProcessSlots(count: 2)
        try await slots.acquire()
        try await slots.acquire()
        #expect(slots.free == 0)
        let order = Order()
        let third = Task { try await slots.acquire(); order.append(3) }
        try await eventually("the third to wait") { slots.waiters == 1 }
        let fourth = Task { try await slots.acquire(); order.append(4) }
        try await eventually("the fourth to wait") { slots.waiters == 2 }
        #expect(order.numbers.isEmpty)
        slots.release()
        try await third.value
        #expect(order.numbers == [3])
        slots.release()
        try await fourth.value
        #expect(order.numbers == [3, 4])
        slots.release()
        slots.release()
        #expect(slots.free == 2)
    }

    @Test func aWaiterWhoseTaskIsCancelledHoldsNoSlot() async throws {
        let slots = ProcessSlots(count: 1)
        try await slots.acquire()
        let waiting = Task { try await slots.acquire() }
        try await eventually("the waiter to wait") { slots.waiters == 1 }
        waiting.cancel()
        await #expect(throws: CancellationError.self) { try await waiting.value }
        #expect(slots.waiters == 0)
        slots.release()
        #expect(slots.free == 1)
    }
}
