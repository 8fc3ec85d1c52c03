import Foundation
@testable import paperboy
import Testing

/// The live block's figures from sizes and dates a daemon reports (outside input): absurd ones
/// are shown within range, never a trap on a conversion.
@Suite("The progress block's figures")
struct ProgressFiguresTests {
    @Test func aRateBeyondInt64IsShownAtItsLargest() {
        #expect(ProgressDisplay.rate(1e30) == ProgressDisplay.rate(9.3e18))
        #expect(ProgressDisplay.rate(-5) == ProgressDisplay.rate(0))
        #expect(ProgressDisplay.rate(2_048) == "\(Console.bytes(2_048))/s")
    }

    @Test func anETABeyondAYearIsShownAsAYear() {
        #expect(ProgressDisplay.duration(1e30) == ProgressDisplay.duration(366 * 86_400))
        #expect(ProgressDisplay.duration(Double(Int64.max) / 1) == "8784 h 0 min")
        #expect(ProgressDisplay.duration(61) == "1 min 1 s")
    }
}
