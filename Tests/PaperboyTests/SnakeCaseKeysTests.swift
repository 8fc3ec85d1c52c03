import Foundation
import Testing
@testable import Paperboy
import PaperboyTesting

/// The snake-case presets' key conversion is Foundation's `convertFromSnakeCase`, remembered.
@Suite("Snake-case keys, remembered")
struct SnakeCaseKeysTests {
    private struct AnyKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init?(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    /// The keys of an object, as a decoder with `strategy` hands them to a type.
    private struct Keys: Decodable {
        let names: Set<String>
        init(from decoder: any Decoder) throws {
            names = Set(try decoder.container(keyedBy: AnyKey.self).allKeys.map(\.stringValue))
        }
    }

    private func foundations(_ key: String) throws -> String {
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        let json = try JSONSerialization.data(withJSONObject: [key: 0])
        return try #require(try decoder.decode(Keys.self, from: json).names.first)
    }

    @Test func theConversionIsFoundationsOnProtocolKeysAndOddOnes() throws {
        let keys = ["id", "total_bytes_written", "expected_total_bytes", "bytes_written", "event", "state", "user_info",
                    "transport_code", "proxy_url", "next_offset", "_leading", "trailing_", "__both__", "_", "___", "",
                    "a__b", "already_camelCase", "URL_path", "x_1_y", "ümlaut_straße", "i̇_dotted", "dž_digraph", "a b_c d",
                    "snake_ΣΑΣ_ς", "no-dash_here", "123_456"]
        for key in keys {
            #expect(SnakeCaseKeys.convert(key) == (try foundations(key)), "\(key)")
        }
    }

    /// 3,000 random keys of underscores, cases, digits and a few letters that change length or
    /// form when their case changes (fixed seed, printed).
    @Test func randomKeysConvertAsFoundationDoes() throws {
        let alphabet = Array("__abcXYZ09éßİıǅΣς ") + ["e\u{301}"]
        var generator = SplitMix64(seed: 0x5EED_CA5E)
        for _ in 0..<3_000 {
            let key = String((0..<Int.random(in: 0...12, using: &generator)).map { _ in alphabet.randomElement(using: &generator)! })
            #expect(SnakeCaseKeys.convert(key) == (try foundations(key)), "\(key.unicodeScalars.map { String($0.value, radix: 16) })")
        }
    }

    /// Only short keys are remembered, and only so many: keys come from outside.
    @Test func whatIsRememberedIsBounded() {
        let keys = SnakeCaseKeys()
        for index in 0..<(SnakeCaseKeys.maxKeys + 500) { _ = keys.converted("key_\(index)") }
        #expect(keys.rememberedCount == SnakeCaseKeys.maxKeys)
        let long = String(repeating: "a_", count: SnakeCaseKeys.maxKeyBytes)
        let fresh = SnakeCaseKeys()
        #expect(fresh.converted(long) == SnakeCaseKeys.convert(long))
        #expect(fresh.rememberedCount == 0)
    }
}
