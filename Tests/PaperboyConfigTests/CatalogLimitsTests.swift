import Foundation
import Testing
import PaperboyConfig

/// What a publisher's catalog may ask for: a bounded number of assets, and URLs a catalog may
/// point the library at.
@Suite("Catalog limits", .timeLimit(.minutes(1)))
struct CatalogLimitsTests {
    static let catalogURL = URL(string: "https://news.example.com/daily/catalog.json")!

    /// A catalog of `issues` issues with `assets` assets each and a cover each.
    static func catalog(issues: Int, assets: Int) -> Data {
        let list = (0..<issues).map { issue in
            let files = (0..<assets).map { #"{"url": "i\#(issue)/a\#($0).pdf"}"# }.joined(separator: ",")
            return #"{"name": "i\#(issue)", "date": "2026-11-21", "cover": "c\#(issue).png", "assets": [\#(files)]}"#
        }
        return Data(#"{"issues": [\#(list.joined(separator: ","))]}"#.utf8)
    }

    @Test func aCatalogListingMoreAssetsThanTheLimitIsRefusedNamingTheLimit() throws {
        // 3 issues × (1 cover + 4 assets) = 15 assets.
        let data = Self.catalog(issues: 3, assets: 4)
        #expect(try Catalog.parse(data, feed: "daily", url: Self.catalogURL, limits: Catalog.Limits(maxAssets: 15)).issues.count == 3)
        let error = try #require(throws: CatalogError.self) {
            try Catalog.parse(data, feed: "daily", url: Self.catalogURL, limits: Catalog.Limits(maxAssets: 14))
        }
        #expect(error.path == "issues[2]")
        #expect(error.description.contains("more than 14 assets"), "\(error)")
        #expect(error.description.contains("max_assets"), "\(error)")
    }

    @Test func theDefaultLimitIsTenThousandAssets() async throws {
        #expect(Catalog.Limits().maxAssets == 10_000)
        // A big catalog made and parsed on a thread of its own, not the cooperative pool.
        let refusal = try await offThePool { () -> String? in
            do {
                _ = try Catalog.parse(Self.catalog(issues: 1, assets: 10_000), feed: "daily", url: Self.catalogURL)
                return nil
            } catch let error as CatalogError {
                return error.description
            }
        }
        let message = try #require(refusal, "a catalog of 10001 assets was accepted")
        #expect(message.contains("more than 10000 assets"), "\(message)")
    }

    @Test func assetsOnTheCatalogsOwnServerMayUseItsScheme() throws {
        let catalog = URL(string: "sftp://files.example.com:2222/pub/catalog.json")!
        let text = #"{"issues": [{"name": "a", "date": "2026-11-21", "assets": [{"url": "a.pdf"}, {"url": "https://cdn.example.com/b.pdf"}]}]}"#
        let parsed = try Catalog.parse(Data(text.utf8), feed: "daily", url: catalog)
        #expect(parsed.issues[0].assets.map(\.url.absoluteString) == [
            "sftp://files.example.com:2222/pub/a.pdf", "https://cdn.example.com/b.pdf",
        ])
        // Another SSH server, or another port of the same one, is not the catalog's server.
        for other in ["sftp://files.example.com/pub/x", "sftp://build.example.com:2222/x", "sftp://root@files.example.com:2222/x"] {
            let text = #"{"issues": [{"name": "a", "date": "2026-11-21", "assets": [{"url": "\#(other)"}]}]}"#
            let error = try #require(throws: CatalogError.self, "\(other)") {
                try Catalog.parse(Data(text.utf8), feed: "daily", url: catalog)
            }
            #expect(error.description.contains("uses the scheme 'sftp'"), "\(error)")
            #expect(try Catalog.parse(Data(text.utf8), feed: "daily", url: catalog,
                                      limits: Catalog.Limits(allowedSchemes: ["sftp"])).issues.count == 1)
        }
    }

    @Test func feedKeysSetTheLimits() throws {
        let config = try PaperboyConfiguration.parse("""
            [[feeds]]
            name = "daily"
            url = "https://news.example.com/catalog.json"
            max_assets = 50
            allowed_schemes = ["sftp", "IPFS"]
            refresh = "6h"

            [[feeds]]
            name = "weekly"
            url = "https://news.example.com/weekly.json"
            """, fileURL: fixtureFile, environment: fixtureEnvironment)
        #expect(config.feeds[0].limits == Catalog.Limits(maxAssets: 50, allowedSchemes: ["sftp", "ipfs"]))
        #expect(config.feeds[1].limits == Catalog.Limits())
        #expect(config.feeds[0].refresh == .seconds(6 * 3600) && config.feeds[1].refresh == nil)
    }

    @Test(arguments: [
        ("max_assets = 0", 4, "feeds[0].max_assets", "expected an integer of at least 1"),
        ("allowed_schemes = [\"s ftp\"]", 4, "feeds[0].allowed_schemes[0]", "expected a URL scheme"),
        ("allowed_schemes = [\"file\"]", 4, "feeds[0].allowed_schemes[0]", "local files only when it is a local file"),
        ("refresh = \"59s\"", 4, "feeds[0].refresh", "expected a duration from 1m to 720h, got 59s"),
        ("refresh = \"721h\"", 4, "feeds[0].refresh", "expected a duration from 1m to 720h, got 721h"),
        ("refresh = \"often\"", 4, "feeds[0].refresh", "expected a duration like"),
    ])
    func badFeedLimitsAreConfigurationErrors(_ line: String, _ number: Int, _ key: String, _ message: String) throws {
        let error = try #require(throws: ConfigError.self) {
            try PaperboyConfiguration.parse("[[feeds]]\nname = \"daily\"\nurl = \"https://news.example.com/c.json\"\n\(line)\n",
                                            fileURL: fixtureFile, environment: fixtureEnvironment)
        }
        #expect(error.line == number, "\(error)")
        #expect(error.key == key, "\(error)")
        #expect(error.description.contains(message), "\(error)")
    }
}

/// A catalog goes through the one reader for outside JSON: each hostile document is refused
/// before it is decoded, with an error naming the feed, the door and the limit.
@Suite("Catalog JSON limits", .timeLimit(.minutes(1)))
struct CatalogJSONLimitsTests {
    static let url = URL(string: "https://news.example.com/daily/catalog.json")!
    static let prefix = #"{"issues": [], "x": "#

    static func offset(of needle: String, in text: String) -> Int {
        text.utf8.count - text.components(separatedBy: needle).dropFirst().joined(separator: needle).utf8.count - needle.utf8.count
    }

    static let members = "{" + (0...4096).map { #""k\#($0)":0"# }.joined(separator: ",") + "}"

    static let hostile: [(document: String, message: String)] = [
        (prefix + String(repeating: "[", count: 70) + String(repeating: "]", count: 70) + "}", "catalog: JSON nested deeper than 64 levels at byte 83"),
        (prefix + String(repeating: #"{"a":"#, count: 70) + "1" + String(repeating: "}", count: 71),
         "catalog: JSON nested deeper than 64 levels at byte 335"),
        (prefix + "\"" + String(repeating: "a", count: 65_537) + "\"}", "catalog: JSON string longer than 65536 bytes at byte 20"),
        (prefix + members + "}", "catalog: JSON object of more than 4096 members at byte \(offset(of: #""k4096""#, in: prefix + members))"),
        (prefix + "[0,0,0,0,0,0]}", "catalog: JSON array of more than 5 elements at byte 31 (raise max_assets of this [[feeds]] entry if that is expected)"),
        (#"{"issues": ["#, "catalog: invalid JSON at byte 12: unexpected end of the JSON"),
        (prefix + "\"a\u{0}\"}", "catalog: invalid JSON at byte 22: control character U+0000 in a string"),
        (prefix + #""\ud800"}"#, "catalog: invalid JSON at byte 21: lone surrogate \\ud800 in a string"),
        (prefix + "1e999}", "catalog: JSON number 1e999 is out of range at byte 20"),
    ]

    @Test(arguments: hostile)
    func aHostileCatalogIsRefusedBeforeItIsDecoded(document: String, message: String) throws {
        let error = try #require(throws: CatalogError.self) {
            try Catalog.parse(Data(document.utf8), feed: "daily", url: Self.url, limits: Catalog.Limits(maxAssets: 5))
        }
        #expect(error.path == nil)
        #expect(error.description == "feed 'daily' (https://news.example.com/daily/catalog.json): \(message)")
    }
}
