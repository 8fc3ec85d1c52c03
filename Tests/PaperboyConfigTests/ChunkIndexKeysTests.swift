import Foundation
import PaperboyConfig
import Testing

/// `index` and `indexed` of `[[issues.assets]]` and of catalog assets (docs/Configuration.md,
/// docs/Publishers.md).
struct ChunkIndexKeysTests {
    func asset(_ keys: String) throws -> AssetEntry? {
        let config = try PaperboyConfiguration.parse("""
            [[issues]]
            name = "a"
            date = 2026-11-21
            [[issues.assets]]
            url = "https://cdn.example.com/a/mag.pdf"
            \(keys)
            """, fileURL: fixtureFile, environment: fixtureEnvironment)
        return config.issues.first?.assets.first
    }

    @Test func indexedMeansTheURLPlusPbidxAndIndexNamesIt() throws {
        #expect(try asset("indexed = true")?.index?.absoluteString == "https://cdn.example.com/a/mag.pdf.pbidx")
        #expect(try asset("index = \"https://cdn.example.com/idx/mag.pbidx\"")?.index?.absoluteString == "https://cdn.example.com/idx/mag.pbidx")
        #expect(try asset("index = \"https://cdn.example.com/idx/mag.pbidx\"\nindexed = true")?.index?.absoluteString
                == "https://cdn.example.com/idx/mag.pbidx")
        #expect(try asset("indexed = false")?.index == nil)
        #expect(try asset("")?.index == nil)
    }

    @Test func indexedFalseBesideAnIndexAndAPasswordAreRefusedNamingTheKey() throws {
        #expect { try asset("index = \"https://cdn.example.com/i.pbidx\"\nindexed = false") } throws: { error in
            "\(error)".contains("indexed")
        }
        #expect { try asset("index = \"https://u:secret@cdn.example.com/i.pbidx\"") } throws: { error in
            "\(error)".contains("index") && !"\(error)".contains("secret")
        }
    }

    @Test func aCatalogAssetNamesItsIndexResolvedAgainstTheCatalog() throws {
        let catalog = try Catalog.parse(Data("""
            {"issues": [{"name": "n", "date": "2026-11-21", "assets": [
                {"url": "issues/a.pdf", "indexed": true},
                {"url": "issues/b.pdf", "index": "idx/b.pbidx"},
                {"url": "issues/c.pdf"}]}]}
            """.utf8), feed: "daily", url: URL(string: "https://news.example.com/daily/catalog.json")!)
        let assets = try #require(catalog.issues.first).entry.assets
        #expect(assets.map { $0.index?.absoluteString } == [
            "https://news.example.com/daily/issues/a.pdf.pbidx", "https://news.example.com/daily/idx/b.pbidx", nil,
        ])
        #expect { try Catalog.parse(Data("""
            {"issues": [{"name": "n", "date": "2026-11-21", "assets": [{"url": "a.pdf", "indexed": "yes"}]}]}
            """.utf8), feed: "daily", url: URL(string: "https://news.example.com/catalog.json")!) } throws: { error in
            "\(error)".contains("assets[0].indexed")
        }
    }
}
