import Synchronization
import Testing
@testable import Paperboy

/// A callback held for any thread and read very often (a daemon client's event observer, a
/// split download's progress reader) must cost the same at every read.
@Suite("Locked functions", .timeLimit(.minutes(1)))
struct LockedFunctionTests {
    /// Held in a `Mutex` and read with `withLock { $0 }`, a function came back wrapped in one
    /// more thunk at each read, and its call overflowed the stack after about 100,000 reads.
    @Test func aFunctionReadAndCalledOftenStaysTheSameFunction() {
        let held = LockedFunction<@Sendable (Int) -> Int>()
        #expect(held.function == nil)
        held.set { $0 + 1 }
        var total = 0
        for index in 0..<200_000 { total &+= held.function?(index) ?? 0 }
        #expect(total == (0..<200_000).reduce(0) { $0 + $1 + 1 })
        held.set(nil)
        #expect(held.function == nil)
    }

    /// The live figures of a split download, read as often as a display asks.
    @Test func aSplitDownloadsProgressReadOftenIsRead() {
        let live = LiveProgress()
        live.split.set { nil }
        for _ in 0..<200_000 { _ = live.splitProgress }
        #expect(live.splitProgress == nil)
    }
}
