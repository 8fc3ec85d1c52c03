import Foundation
import Testing
import Paperboy
import PaperboyConfig
import PaperboyTesting

/// Thousands of mutated catalogs per run: each one is either refused with a ``CatalogError``
/// or parsed into a catalog that keeps every promise the reader makes. Nothing traps.
@Suite("Catalog reader under random input", .timeLimit(.minutes(3)))
struct CatalogFuzzTests {
    static let catalogURL = URL(string: "https://news.example.com/daily/catalog.json")!
    static let sha = String(repeating: "0f", count: 32)
    static let seed: UInt64 = ProcessInfo.processInfo.environment["PAPERBOY_FUZZ_SEED"].flatMap(UInt64.init) ?? 0x5EED_CA7A_1065

    static let valid = """
        {"issues": [
          {"name": "2026-11-21", "date": "2026-11-21", "title": "Saturday", "cover": "covers/a.png",
           "assets": [{"url": "issues/a.zip", "sha256": "\(sha)", "size": 123, "unpack": "zip", "priority": 3},
                      {"url": "https://cdn.example.com/b.pdf", "path": "b/b.pdf", "role": "content"}]},
          {"name": "2026-11-22", "date": "2026-11-22T06:00:00Z", "cover": {"url": "c.png", "role": "cover"},
           "assets": [{"url": "../shared/c.pdf", "size": 0}]}
        ]}
        """

    /// Values a hostile publisher might put anywhere.
    static let hostileValues = [
        "1e300", "-1e300", "-1", "9223372036854775807", "9223372036854775808", "-9223372036854775809",
        "18446744073709551616", "0.5", "1E-400", "null", "true", "[]", "{}", "\"\"", "\"..\"", "\"/etc/passwd\"",
        "\"file:///etc/shadow\"", "\"sftp://internal/x\"", "\"../../x\"", "\"\\u0000\"", "\"\\u001b[2J\"", "\"\\u202e\"",
        "\"\\ud800\"", "\"a/../../b\"", "\"9999-99-99\"", "\"0000-01-01\"", "\"-2026-11-21\"", "\"2026-11-21T99:99:99Z\"",
        "\"http://[::1\"", "\"ht tp://x y\"", "\"javascript:alert(1)\"", "\"data:,x\"", "\"\(String(repeating: "a", count: 300))\"",
        String(repeating: "[", count: 600) + String(repeating: "]", count: 600),
        String(repeating: "{\"a\":", count: 300) + "1" + String(repeating: "}", count: 300),
    ]

    static let keys = ["issues", "name", "date", "title", "cover", "assets", "url", "sha256", "size", "path", "unpack", "role", "priority"]

    static func mutate(_ text: String, _ random: inout SplitMix64) -> String {
        var bytes = Array(text.utf8)
        for _ in 0..<Int.random(in: 1...4, using: &random) {
            switch Int.random(in: 0..<6, using: &random) {
            case 0 where !bytes.isEmpty:
                // Flip a byte.
                bytes[Int.random(in: 0..<bytes.count, using: &random)] = UInt8.random(in: 0...255, using: &random)
            case 1 where !bytes.isEmpty:
                // Cut a piece out.
                let start = Int.random(in: 0..<bytes.count, using: &random)
                let end = min(bytes.count, start + Int.random(in: 1...40, using: &random))
                bytes.removeSubrange(start..<end)
            case 2:
                // Replace the value after a random key with a hostile one.
                let key = "\"\(keys.randomElement(using: &random)!)\":"
                let string = String(decoding: bytes, as: UTF8.self)
                let ranges = string.ranges(of: key)
                guard let range = ranges.randomElement(using: &random) else { continue }
                let rest = string[range.upperBound...].drop { $0 == " " }
                let valueEnd = Self.endOfValue(in: rest)
                bytes = Array((String(string[..<range.upperBound]) + " " + hostileValues.randomElement(using: &random)!
                               + String(string[valueEnd...])).utf8)
            case 3 where !bytes.isEmpty:
                // Duplicate a piece (repeated keys, repeated issues).
                let start = Int.random(in: 0..<bytes.count, using: &random)
                let end = min(bytes.count, start + Int.random(in: 1...120, using: &random))
                bytes.insert(contentsOf: bytes[start..<end], at: Int.random(in: 0...bytes.count, using: &random))
            case 4:
                // Insert a hostile value anywhere.
                bytes.insert(contentsOf: Array(hostileValues.randomElement(using: &random)!.utf8),
                             at: Int.random(in: 0...bytes.count, using: &random))
            default:
                // Invalid UTF-8 or a control byte.
                bytes.insert([0xFF, 0xC0, 0x80, 0x00, 0x1B, 0x7F].randomElement(using: &random)!,
                             at: Int.random(in: 0...bytes.count, using: &random))
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Where a JSON value that starts `text` ends (roughly: strings, nesting and scalars).
    static func endOfValue(in text: Substring) -> Substring.Index {
        var depth = 0
        var inString = false
        var escaped = false
        for index in text.indices {
            let character = text[index]
            if inString {
                if escaped { escaped = false } else if character == "\\" { escaped = true } else if character == "\"" {
                    inString = false
                    if depth == 0 { return text.index(after: index) }
                }
                continue
            }
            switch character {
            case "\"": inString = true
            case "{", "[": depth += 1
            case "}", "]":
                if depth == 0 { return index }
                depth -= 1
                if depth == 0 { return text.index(after: index) }
            case ",":
                if depth == 0 { return index }
            default: break
            }
        }
        return text.endIndex
    }

    /// The promises a parsed catalog keeps, whatever the input.
    static func check(_ catalog: Catalog, limits: Catalog.Limits) -> String? {
        var count = 0
        var names = Set<String>()
        for issue in catalog.issues {
            if !names.insert(issue.name).inserted { return "duplicate issue \(issue.name)" }
            if let problem = IssueName.problem(with: issue.name) { return "issue name \(problem)" }
            var paths = Set<String>()
            for asset in issue.allAssets {
                count += 1
                let scheme = asset.url.scheme?.lowercased() ?? ""
                if !["http", "https"].contains(scheme), !(scheme == "https" && asset.url.host == catalogURL.host) {
                    return "asset URL \(asset.url) has a scheme the catalog may not use"
                }
                if let problem = RelativePath.problem(with: asset.path) { return "asset path \(problem)" }
                if !paths.insert(asset.path).inserted { return "duplicate path \(asset.path)" }
                if let size = asset.size, size < 0 { return "negative size \(size)" }
                if let sha = asset.sha256, sha.count != 64 || !sha.allSatisfy(\.isHexDigit) { return "bad sha256 \(sha)" }
            }
        }
        return count > limits.maxAssets ? "\(count) assets over the limit \(limits.maxAssets)" : nil
    }

    @Test func theUnmutatedCatalogParses() throws {
        let catalog = try Catalog.parse(Data(Self.valid.utf8), feed: "daily", url: Self.catalogURL)
        #expect(catalog.issues.count == 2)
        #expect(Self.check(catalog, limits: Catalog.Limits()) == nil)
    }

    @Test func mutatedCatalogsAreRefusedOrKeepEveryPromise() async throws {
        // Seconds of parsing in a debug build: on a thread of its own, not the cooperative pool.
        let (parsed, refused, broken) = try await offThePool { () -> (Int, Int, String?) in
            var random = SplitMix64(seed: Self.seed)
            let limits = Catalog.Limits(maxAssets: 6)
            var parsed = 0
            var refused = 0
            for round in 0..<2_000 {
                let text = Self.mutate(Self.valid, &random)
                do {
                    let catalog = try Catalog.parse(Data(text.utf8), feed: "daily", url: Self.catalogURL, limits: limits)
                    parsed += 1
                    if let broken = Self.check(catalog, limits: limits) { return (parsed, refused, "round \(round): \(broken)\n\(text)") }
                } catch let error as CatalogError {
                    refused += 1
                    let message = error.description
                    if message.unicodeScalars.contains(where: { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) || (0x202A...0x202E).contains($0.value) }) {
                        return (parsed, refused, "round \(round): a control character in the error message \(message.debugDescription)\n\(text)")
                    }
                }
            }
            return (parsed, refused, nil)
        }
        #expect(broken == nil, "seed \(Self.seed) \(broken ?? "")")
        // Both outcomes happen: the mutations are neither all fatal nor all harmless.
        #expect(parsed > 50 && refused > 50, "seed \(Self.seed): parsed \(parsed), refused \(refused)")
    }

    @Test func deepNestingIsRefusedNotACrash() async throws {
        let outcomes = try await offThePool {
            [1_000, 100_000].map { depth -> String in
                let text = #"{"issues": "# + String(repeating: "[", count: depth) + String(repeating: "]", count: depth) + "}"
                do {
                    _ = try Catalog.parse(Data(text.utf8), feed: "daily", url: Self.catalogURL)
                    return "depth \(depth): parsed"
                } catch is CatalogError {
                    return "depth \(depth): refused"
                } catch {
                    return "depth \(depth): \(type(of: error)) \(error)"
                }
            }
        }
        #expect(outcomes == ["depth 1000: refused", "depth 100000: refused"])
    }
}
