import Foundation
@testable import Paperboy
import PaperboyTesting
import Synchronization
import Testing

/// ``EventBroadcaster``: a subscriber cancelled while events are being sent.
@Suite("event broadcaster", .timeLimit(.minutes(1)))
struct EventBroadcasterTests {
    let folder = TempFolder()

    final class Flag: Sendable {
        let raised = Atomic<Bool>(false)
    }

    /// Cancelling a subscriber's task holds its status lock while the stream's termination
    /// handler takes the broadcaster's lock; a `yield` that resumes that task takes its status
    /// lock. A `yield` made under the broadcaster's lock deadlocked with such a cancel (a daemon
    /// stopping right after a delivery hung after 'stopping', 1 run in 30 under load, its stacks
    /// taken with gdb). Here one thread sends events without pause while subscribers are made
    /// and cancelled, and every cancel must return (a hang ends at the suite's time limit). The
    /// window is narrow: this did not hang the old `send` in 3 runs; it guards the rule.
    @Test func subscribersCancelledWhileEventsAreSentNeverDeadlock() async throws {
        let library = try Library.open(at: folder.file("library"), transports: TransportRegistry([InMemoryTransport()]),
                                       configuration: .forTests())
        let issue = try await library.addIssue(name: "i", date: Date())
        let broadcaster = EventBroadcaster()
        let event = LibraryEvent.issueDownloadCompleted(issue)
        let stop = Flag()
        let stopped = Flag()
        let sender = Thread {
            while !stop.raised.load(ordering: .relaxed) { broadcaster.send(event) }
            stopped.raised.store(true, ordering: .releasing)
        }
        sender.start()
        var received = 0
        for _ in 0..<3000 {
            let stream = broadcaster.subscribe()
            let consumer = Task {
                var count = 0
                for await _ in stream { count += 1 }
                return count
            }
            await Task.yield()
            consumer.cancel()
            received += await consumer.value
        }
        stop.raised.store(true, ordering: .relaxed)
        try await eventually("the sender stops") { stopped.raised.load(ordering: .acquiring) }
        #expect(!broadcaster.hasSubscribers)
        #expect(received > 0)
        await library.close()
    }
}
