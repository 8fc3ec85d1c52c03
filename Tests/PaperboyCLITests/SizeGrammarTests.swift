import Foundation
import Paperboy
import PaperboyConfig
import Testing
@testable import paperboy

/// `paperboy purge --budget` and the configuration's sizes read one grammar (``ByteCount/init(size:door:)``):
/// the same text is the same number of bytes in both, or refused by both.
@Suite(.timeLimit(.minutes(1)))
struct SizeGrammarTests {
    @Test(arguments: [
        ("500MB", 500_000_000), ("2GiB", 2 << 30), ("1000000", 1_000_000), ("1.5 MB", 1_500_000), ("7B", 7), ("5 ", 5),
        ("4611686018427387904", 4_611_686_018_427_387_904), ("4294967296GiB", 4_611_686_018_427_387_904),
        ("4611686018427387905", nil), ("4294967297GiB", nil), ("500Mb", nil), ("5mb", nil), ("2GiB/s", nil), ("off", nil),
        ("1e3", nil), ("+5", nil), ("-5", nil), ("", nil), ("lots", nil), (String(repeating: "9", count: 500), nil),
    ] as [(String, Int64?)])
    func theBudgetAndTheConfigurationReadSizesAlike(_ text: String, _ bytes: Int64?) throws {
        let budget = try? PurgeCommand.budgetBytes(text)
        let configured = try? PaperboyConfiguration.parse(
            "[library]\nmax_unpacked_size = \"\(text)\"\n", fileURL: URL(fileURLWithPath: "/etc/paperboy.toml"), environment: ["HOME": "/home/reader"]
        ).library.maxUnpackedSize
        #expect(budget == bytes, "--budget \(text.prefix(30))")
        #expect(configured == bytes, "max_unpacked_size \(text.prefix(30))")
    }

    @Test func aRefusedBudgetNamesTheOptionAndTheValue() throws {
        #expect {
            try PurgeCommand.budgetBytes("500Mb")
        } throws: { error in
            "\(error)".hasPrefix("--budget: expected a size such as \"500MB\", \"2GiB\"") && "\(error)".hasSuffix("got \"500Mb\"")
        }
        // 0 is a budget (remove everything removable); a configured size is at least 1 byte.
        #expect(try PurgeCommand.budgetBytes("0") == 0)
    }
}
