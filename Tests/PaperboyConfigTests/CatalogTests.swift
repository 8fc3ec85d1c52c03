import Foundation
import Testing
import PaperboyConfig

@Suite("Publisher catalogs", .timeLimit(.minutes(1)))
struct CatalogTests {
    static let catalogURL = URL(string: "https://news.example.com/daily/catalog.json")!
    static let sha = String(repeating: "ab", count: 32)

    func parse(_ text: String, url: URL = catalogURL, limits: Catalog.Limits = Catalog.Limits()) throws(CatalogError) -> Catalog {
        try Catalog.parse(Data(text.utf8), feed: "daily", url: url, limits: limits)
    }

    @Test func theIssueExampleParsesWithURLsResolvedAgainstTheCatalog() throws {
        let catalog = try parse("""
            {"issues": [{"name": "2026-11-21", "date": "2026-11-21", "title": "…", "cover": "covers/2026-11-21.png",
                         "assets": [{"url": "issues/2026-11-21.zip", "sha256": "\(Self.sha.uppercased())", "size": 123, "unpack": "zip"}]}]}
            """)
        let issue = try #require(catalog.issues.first)
        #expect(issue.name == "2026-11-21")
        #expect(issue.title == "…")
        #expect(issue.date == Date(timeIntervalSince1970: 1_795_219_200))
        let cover = try #require(issue.cover)
        #expect(cover.url.absoluteString == "https://news.example.com/daily/covers/2026-11-21.png")
        #expect(cover.role == .cover && cover.path == "2026-11-21.png")
        let asset = try #require(issue.assets.first)
        #expect(asset.url.absoluteString == "https://news.example.com/daily/issues/2026-11-21.zip")
        #expect(asset.sha256 == Self.sha && asset.size == 123 && asset.unpack == .zip && asset.role == .content)
        // As a configuration entry: the cover first, then the content.
        #expect(issue.entry.assets.map(\.role) == [.cover, .content])
        #expect(issue.entry.assets[1].path == "2026-11-21.zip")
    }

    @Test func urlsResolveLikeLinks() throws {
        let catalog = try parse("""
            {"issues": [{"name": "a", "date": "2026-11-21T06:30:00Z", "publisher_extra": {"price": 3},
                         "cover": {"url": "/static/a.png", "sha256": "\(Self.sha)", "path": "art/cover.png"},
                         "assets": [{"url": "../shared/a.pdf", "priority": 5, "path": "a.pdf"},
                                    {"url": "https://cdn.example.net/a%20b.zip?sig=1"},
                                    {"url": "sftp://files.example.com/a.epub", "role": "content"}]}]}
            """, limits: Catalog.Limits(allowedSchemes: ["sftp"]))
        let issue = try #require(catalog.issues.first)
        #expect(issue.date == Date(timeIntervalSince1970: 1_795_242_600))
        #expect(issue.cover?.url.absoluteString == "https://news.example.com/static/a.png")
        #expect(issue.cover?.path == "art/cover.png" && issue.cover?.sha256 == Self.sha)
        #expect(issue.assets.map(\.url.absoluteString) == [
            "https://news.example.com/shared/a.pdf", "https://cdn.example.net/a%20b.zip?sig=1", "sftp://files.example.com/a.epub",
        ])
        #expect(issue.assets[0].priority == 5)
        #expect(issue.assets[1].path == "a b.zip")

        let local = try parse(#"{"issues": [{"name": "b", "date": "2026-01-02", "assets": [{"url": "issues/b file.pdf"}]}]}"#,
                              url: URL(fileURLWithPath: "/srv/publisher/catalog.json"))
        #expect(local.issues[0].assets[0].url.path == "/srv/publisher/issues/b file.pdf")
        #expect(local.issues[0].assets[0].url.isFileURL)
    }

    /// Issue 26: an asset's URL is stored as a server reads it (URLScope's normal form), so a
    /// `[[credentials]]` path sees what is fetched; spellings servers read differently stay as
    /// written (they never match a credential's path), and backslashes are refused.
    @Test func assetURLsAreStoredAsTheServerReadsThem() throws {
        let catalog = try parse("""
            {"issues": [{"name": "a", "date": "2026-11-21", "assets": [
              {"url": "%2e%2e/premium/%2E%2E/other/x.bin"},
              {"url": "https://cdn.example.net/%7Ealice/b%c3%bc.zip?x=/%2e%2e/"},
              {"url": "https://cdn.example.net/keys/A%2fB.zip"}]}]}
            """)
        #expect(catalog.issues[0].assets.map(\.url.absoluteString) == [
            "https://news.example.com/other/x.bin",
            "https://cdn.example.net/~alice/b%C3%BC.zip?x=/%2e%2e/",
            "https://cdn.example.net/keys/A%2fB.zip",
        ])
        #expect(catalog.issues[0].assets.prefix(2).map(\.path) == ["x.bin", "bü.zip"])
    }

    /// An asset's mirrors are read as its `url` is: resolved against the catalog, normalized, and
    /// carried into its configuration entry.
    @Test func mirrorsAreResolvedAsTheURLIs() throws {
        let catalog = try parse(#"{"issues": [{"name": "a", "date": "2026-11-21", "assets": [{"url": "a.pdf", "mirrors": ["m/%2e%2e/b/a.pdf", "https://mirror.example.org/a.pdf"]}, {"url": "c.pdf"}]}]}"#)
        let asset = catalog.issues[0].assets[0]
        #expect(asset.mirrors.map(\.absoluteString) == ["https://news.example.com/daily/b/a.pdf", "https://mirror.example.org/a.pdf"])
        #expect(asset.entry.mirrors == asset.mirrors)
        #expect(catalog.issues[0].assets[1].mirrors.isEmpty)
    }

    /// "The catalog's own server" is one origin however it is spelled, and no other.
    @Test func theCatalogsOwnServerIsComparedAsAnOrigin() throws {
        let url = URL(string: "sftp://files.example.com/pub/catalog.json")!
        let same = try parse(#"{"issues": [{"name": "a", "date": "2026-11-21", "cover": "sftp://FILES.example.com.:22/pub/c.png"}]}"#, url: url)
        #expect(same.issues[0].cover?.url.host == "FILES.example.com.")
        #expect(throws: CatalogError.self) {
            try parse(#"{"issues": [{"name": "a", "date": "2026-11-21", "cover": "sftp://files.example.com:2222/pub/c.png"}]}"#, url: url)
        }
    }

    @Test(arguments: [
        ("{", nil, "catalog: invalid JSON at byte 1: unexpected end of the JSON"),
        ("[]", nil, "expected an object with an \"issues\" array, got an array"),
        ("{}", "issues", "missing"),
        (#"{"issues": {}}"#, "issues", "expected an array, got an object"),
        (#"{"issues": [3]}"#, "issues[0]", "expected an object, got a number"),
        (#"{"issues": [{"date": "2026-11-21", "cover": "c.png"}]}"#, "issues[0].name", "missing"),
        (#"{"issues": [{"name": 7, "date": "2026-11-21", "cover": "c.png"}]}"#, "issues[0].name", "expected a string, got a number"),
        (#"{"issues": [{"name": "../up", "date": "2026-11-21", "cover": "c.png"}]}"#, "issues[0].name", "must not start with '.'"),
        (#"{"issues": [{"name": "a/b", "date": "2026-11-21", "cover": "c.png"}]}"#, "issues[0].name", "must not contain '/'"),
        // Issue 26: spellings the catalog's own copy of the rules let through, refused by the
        // configuration's (C1 controls) or the library's (`\`, 300-byte components) copy.
        (#"{"issues": [{"name": "a\u0085b", "date": "2026-11-21", "cover": "c.png"}]}"#, "issues[0].name",
         "'a\\u{85}b' must not contain NUL, control or bidi characters"),
        (#"{"issues": [{"name": "\u202Efdp.exe", "date": "2026-11-21", "cover": "c.png"}]}"#, "issues[0].name",
         "'\\u{202E}fdp.exe' must not contain NUL, control or bidi characters"),
        (#"{"issues": [{"name": "a", "date": "2026-11-21", "assets": [{"url": "a.zip", "path": "pages\\a.pdf"}]}]}"#,
         "issues[0].assets[0].path", "'pages\\a.pdf' must not contain '\\' (Windows reads it as '/')"),
        (#"{"issues": [{"name": "a", "date": "2026-11-21", "assets": [{"url": "a.zip", "path": "\#(String(repeating: "x", count: 300))"}]}]}"#,
         "issues[0].assets[0].path", "has a component of 300 bytes; the limit is 255"),
        (#"{"issues": [{"name": "a", "cover": "c.png"}]}"#, "issues[0].date", "missing"),
        (#"{"issues": [{"name": "a", "date": "2026-02-30", "cover": "c.png"}]}"#, "issues[0].date", "expected a date"),
        // Year 10000 in UTC, by its offset or its digits: the library could store it but never read it back.
        (#"{"issues": [{"name": "a", "date": "9999-12-31T23:00:00-05:00", "cover": "c.png"}]}"#, "issues[0].date",
         "\"9999-12-31T23:00:00-05:00\": 10000-01-01T04:00:00Z is outside the dates the library records (years 1 to 9999 in UTC"),
        (#"{"issues": [{"name": "a", "date": "10000-01-01T00:00:00Z", "cover": "c.png"}]}"#, "issues[0].date",
         "\"10000-01-01T00:00:00Z\": 10000-01-01T00:00:00Z is outside the dates the library records"),
        (#"{"issues": [{"name": "a", "date": "0001-01-01T00:00:00+01:00", "cover": "c.png"}]}"#, "issues[0].date",
         "is outside the dates the library records"),
        (#"{"issues": [{"name": "a", "date": "2026-11-21"}]}"#, "issues[0].assets", "at least one asset or a cover"),
        (#"{"issues": [{"name": "a", "date": "2026-11-21", "assets": "x.pdf"}]}"#, "issues[0].assets", "expected an array, got a string"),
        (#"{"issues": [{"name": "a", "date": "2026-11-21", "cover": "c.png"}, {"name": "a", "date": "2026-11-22", "cover": "d.png"}]}"#,
         "issues[1].name", "duplicate issue name 'a' (also issues[0])"),
        (#"{"issues": [{"name": "a", "date": "2026-11-21", "assets": [{"sha256": "00"}]}]}"#, "issues[0].assets[0].url", "missing"),
        (#"{"issues": [{"name": "a", "date": "2026-11-21", "assets": [{"url": "a.zip", "sha256": "abc"}]}]}"#,
         "issues[0].assets[0].sha256", "expected 64 hex digits"),
        (#"{"issues": [{"name": "a", "date": "2026-11-21", "assets": [{"url": "a.zip", "size": -1}]}]}"#,
         "issues[0].assets[0].size", "expected a number of bytes"),
        (#"{"issues": [{"name": "a", "date": "2026-11-21", "assets": [{"url": "a.zip", "size": "12"}]}]}"#,
         "issues[0].assets[0].size", "got a string"),
        (#"{"issues": [{"name": "a", "date": "2026-11-21", "assets": [{"url": "a.zip", "unpack": "rar"}]}]}"#,
         "issues[0].assets[0].unpack", "unknown format 'rar' (known: zip)"),
        (#"{"issues": [{"name": "a", "date": "2026-11-21", "assets": [{"url": "a.zip", "role": "poster"}]}]}"#,
         "issues[0].assets[0].role", "unknown role 'poster'"),
        (#"{"issues": [{"name": "a", "date": "2026-11-21", "assets": [{"url": "a.zip", "path": "../../etc/x"}]}]}"#,
         "issues[0].assets[0].path", "must not contain '..'"),
        (#"{"issues": [{"name": "a", "date": "2026-11-21", "assets": [{"url": "a.zip", "path": "/etc/x"}]}]}"#,
         "issues[0].assets[0].path", "must be relative"),
        (#"{"issues": [{"name": "a", "date": "2026-11-21", "assets": [{"url": "x/a.pdf"}, {"url": "y/a.pdf"}]}]}"#,
         "issues[0].assets[1].path", "'a.pdf' is also the path of issues[0].assets[0]"),
        (#"{"issues": [{"name": "a", "date": "2026-11-21", "assets": [{"url": "file:///etc/passwd"}]}]}"#,
         "issues[0].assets[0].url", "is a local file, but the catalog is not"),
        (#"{"issues": [{"name": "a", "date": "2026-11-21", "assets": [{"url": "sftp://build.internal/secrets.tar"}]}]}"#,
         "issues[0].assets[0].url", "uses the scheme 'sftp'; a catalog's assets may use http, https and the catalog's own server"),
        (#"{"issues": [{"name": "a", "date": "2026-11-21", "cover": "ftp://mirror.example.com/c.png"}]}"#,
         "issues[0].cover.url", "add 'ftp' to allowed_schemes"),
        (#"{"issues": [{"name": "a", "date": "2026-11-21", "assets": [{"url": "https://reader:s3cret@cdn.example.com/a.pdf"}]}]}"#,
         "issues[0].assets[0].url", "'https://…@cdn.example.com/a.pdf' holds a password"),
        (#"{"issues": [{"name": "a", "date": "2026-11-21", "assets": [{"url": "a.pdf", "mirrors": ["https://r:pw@m.example.com/a.pdf"]}]}]}"#,
         "issues[0].assets[0].mirrors[0]", "'https://…@m.example.com/a.pdf' holds a password"),
        (#"{"issues": [{"name": "a", "date": "2026-11-21", "assets": [{"url": "a.pdf", "mirrors": ["sftp://m.example.com/a.pdf"]}]}]}"#,
         "issues[0].assets[0].mirrors[0]", "add 'sftp' to allowed_schemes"),
        (#"{"issues": [{"name": "a", "date": "2026-11-21", "assets": [{"url": "a.pdf", "mirrors": "https://m.example.com/a.pdf"}]}]}"#,
         "issues[0].assets[0].mirrors", "expected an array of URL strings"),
        (#"{"issues": [{"name": "a", "date": "2026-11-21", "assets": [{"url": "a.pdf", "mirrors": [5]}]}]}"#,
         "issues[0].assets[0].mirrors[0]", "expected a URL string"),
        (#"{"issues": [{"name": "a", "date": "2026-11-21", "assets": [{"url": "a.pdf", "mirrors": [\#(String(repeating: #""m.pdf", "#, count: 16))"m.pdf"]}]}]}"#,
         "issues[0].assets[0].mirrors", "17 mirrors; at most 16"),
        (#"{"issues": [{"name": "a", "date": "2026-11-21", "cover": 5}]}"#, "issues[0].cover", "a URL string or an object"),
        (#"{"issues": [{"name": "a", "date": "2026-11-21", "cover": "\\\\evil.example\\c.png"}]}"#,
         "issues[0].cover.url", "holds a backslash, which URL parsers read differently"),
        (#"{"issues": [{"name": "a", "date": "2026-11-21", "cover": {"url": "c.png", "role": "content"}}]}"#,
         "issues[0].cover.role", "a cover has the role 'cover'"),
        (#"{"issues": [{"name": "a", "date": "2026-11-21", "assets": [{"url": "a.zip", "priority": 1.5}]}]}"#,
         "issues[0].assets[0].priority", "expected an integer, got 1.5"),
    ] as [(String, String?, String)])
    func malformedCatalogsNameTheFeedAndTheJSONPath(_ text: String, _ path: String?, _ message: String) {
        #expect {
            _ = try parse(text)
        } throws: { error in
            guard let error = error as? CatalogError else { return false }
            let text = error.description
            let prefix = "feed 'daily' (https://news.example.com/daily/catalog.json): " + (path.map { "\($0): " } ?? "")
            #expect(text.hasPrefix(prefix), "\(text)")
            #expect(text.contains(message), "\(text)")
            return error.path == path
        }
    }

    /// An asset's `size` is a ``ByteCount``: a whole JSON number from 0 to 2^62 (`1e3` is 1000).
    @Test(arguments: [
        ("0", 0), ("4611686018427387904", 4_611_686_018_427_387_904), ("1e3", 1000), ("1000.0", 1000),
        ("4611686018427387905", nil), ("9223372036854775807", nil), ("1e19", nil), ("-1", nil), ("1.5", nil),
        ("\"12\"", nil), ("true", nil),
    ] as [(String, Int64?)])
    func anAssetSizeIsAByteCount(_ size: String, _ bytes: Int64?) throws {
        let text = #"{"issues": [{"name": "a", "date": "2026-11-21", "assets": [{"url": "a.zip"}, {"url": "b.zip", "size": "# + size + "}]}]}"
        guard let bytes else {
            #expect {
                _ = try parse(text)
            } throws: { error in
                let text = (error as? CatalogError)?.description ?? ""
                #expect(text.hasPrefix("feed 'daily' (https://news.example.com/daily/catalog.json): issues[0].assets[1].size: "
                                       + "expected a number of bytes (a whole number from 0 to 2^62), got "), "\(text)")
                return true
            }
            return
        }
        #expect(try parse(text).issues[0].assets[1].size == bytes)
    }

    @Test func errorsNeverShowAPassword() {
        let url = URL(string: "https://reader:s3cret@news.example.com/catalog.json")!
        #expect {
            _ = try parse("{}", url: url)
        } throws: { error in
            let text = "\(error)"
            return !text.contains("s3cret") && text.contains("news.example.com/catalog.json")
        }
    }
}
