import CPaperboyCurl
import CPaperboySystem
import Foundation
@testable import PaperboyHTTP
import Testing

/// The allocator libcurl gets (``CurlMulti``): large blocks freed are kept for the next ones.
/// Each test has a recycler of its own; the process's is shared with every transfer.
@Suite struct RecyclingAllocatorTests {
    /// A recycler of the test's own, drained and freed after `body`.
    private func withRecycler(_ body: (UnsafeMutablePointer<paperboy_recycler>) throws -> Void) rethrows {
        let recycler = UnsafeMutablePointer<paperboy_recycler>.allocate(capacity: 1)
        paperboy_recycler_init(recycler)
        defer {
            paperboy_recycler_drain(recycler)
            recycler.deallocate()
        }
        try body(recycler)
    }

    private let receiveBuffer = 512 * 1024 + 1

    @Test func aFreedReceiveBufferIsHandedToTheNextRequest() throws {
        try withRecycler { recycler in
            let first = try #require(paperboy_recycler_malloc(recycler, receiveBuffer))
            paperboy_recycler_free(recycler, first)
            #expect(paperboy_recycler_kept(recycler) == 1)
            let second = try #require(paperboy_recycler_malloc(recycler, receiveBuffer))
            #expect(second == first)
            #expect(paperboy_recycler_kept(recycler) == 0)
            paperboy_recycler_free(recycler, second)
        }
    }

    @Test func smallBlocksAreNotKept() throws {
        try withRecycler { recycler in
            let small = try #require(paperboy_recycler_malloc(recycler, 4096))
            paperboy_recycler_free(recycler, small)
            #expect(paperboy_recycler_kept(recycler) == 0)
            let belowTheMinimum = try #require(paperboy_recycler_malloc(recycler, Int(PAPERBOY_RECYCLE_MIN) - 4096))
            paperboy_recycler_free(recycler, belowTheMinimum)
            #expect(paperboy_recycler_kept(recycler) == 0)
        }
    }

    @Test func aKeptBlockIsNotHandedToARequestOfLessThanHalfItsSize() throws {
        try withRecycler { recycler in
            let large = try #require(paperboy_recycler_malloc(recycler, Int(PAPERBOY_RECYCLE_MAX)))
            paperboy_recycler_free(recycler, large)
            #expect(paperboy_recycler_kept(recycler) == 1)
            let smaller = try #require(paperboy_recycler_malloc(recycler, Int(PAPERBOY_RECYCLE_MIN)))
            #expect(smaller != large)
            #expect(paperboy_recycler_kept(recycler) == 1)
            paperboy_recycler_free(recycler, smaller)
        }
    }

    @Test func aBlockLargerThanTheMaximumIsNotKept() throws {
        try withRecycler { recycler in
            let huge = try #require(paperboy_recycler_malloc(recycler, 2 * Int(PAPERBOY_RECYCLE_MAX)))
            paperboy_recycler_free(recycler, huge)
            #expect(paperboy_recycler_kept(recycler) == 0)
        }
    }

    @Test func atMostTheSlotsAreKept() throws {
        try withRecycler { recycler in
            let slots = Int(PAPERBOY_RECYCLE_SLOTS)
            let blocks = try (0...slots).map { _ in try #require(paperboy_recycler_malloc(recycler, receiveBuffer)) }
            for block in blocks { paperboy_recycler_free(recycler, block) }
            #expect(Int(paperboy_recycler_kept(recycler)) == slots)
        }
    }

    @Test func aRecycledBlockFromCallocIsZeroed() throws {
        try withRecycler { recycler in
            let used = try #require(paperboy_recycler_malloc(recycler, receiveBuffer))
            used.initializeMemory(as: UInt8.self, repeating: 0xA5, count: receiveBuffer)
            paperboy_recycler_free(recycler, used)
            let zeroed = try #require(paperboy_recycler_calloc(recycler, receiveBuffer, 1))
            #expect(zeroed == used)
            let bytes = UnsafeRawBufferPointer(start: zeroed, count: receiveBuffer)
            #expect(bytes.allSatisfy { $0 == 0 })
            paperboy_recycler_free(recycler, zeroed)
        }
    }

    @Test func callocRefusesASizeThatOverflows() {
        withRecycler { recycler in
            #expect(paperboy_recycler_calloc(recycler, Int.max, 4) == nil)
        }
    }

    @Test func libcurlAllocatesThroughTheRecycler() throws {
        _ = CurlMulti.shared
        let before = paperboy_recycling_allocations()
        let handle = try #require(curl_easy_init())
        curl_easy_cleanup(handle)
        #expect(paperboy_recycling_allocations() > before)
    }
}
