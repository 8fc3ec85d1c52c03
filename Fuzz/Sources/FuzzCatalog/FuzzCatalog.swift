import Foundation
import FuzzSupport
import Paperboy
import PaperboyConfig

/// The catalog reader (`Catalog.parse`, what `sync` and the daemon do with a feed's JSON).
///
/// Promises (docs/Security.md, "Catalogs"): an input is refused with a `CatalogError` whose
/// message holds no control character but tab (`TerminalText.escape`'s rule), or parsed into issues with distinct names that are not
/// paths (``IssueName``), dated in years 1 to 9999 in UTC (what the store can read back), whose
/// assets use http, https or the catalog's own server, have distinct paths inside the issue folder
/// (``RelativePath``),
/// sizes of 0 or more and checksums of 64 hex digits, at most `maxAssets` of them.
@main
enum FuzzCatalog {
    static func main() { Fuzzer.main(fuzz) }
}

let catalogURL = URL(string: "https://news.example.com/daily/catalog.json")!
let limits = Catalog.Limits(maxAssets: 8)
let firstDay = Date(timeIntervalSince1970: -62_135_596_800)  // 0001-01-01T00:00:00Z
let dayAfterLast = Date(timeIntervalSince1970: 253_402_300_800)  // 10000-01-01T00:00:00Z

@_cdecl("LLVMFuzzerTestOneInput")
func fuzz(_ bytes: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    let catalog: Catalog
    do {
        catalog = try Catalog.parse(Fuzzer.data(bytes, count), feed: "daily", url: catalogURL, limits: limits)
    } catch {
        let message = error.description
        Fuzzer.expect(!message.unicodeScalars.contains { ($0.value < 0x20 && $0 != "\t") || (0x7F...0x9F).contains($0.value) || (0x202A...0x202E).contains($0.value) },
                      "a control character in the error \(message.debugDescription)")
        return 0
    }
    var names = Set<String>()
    var assets = 0
    for issue in catalog.issues {
        Fuzzer.expect(names.insert(issue.name).inserted, "two issues named \(issue.name.debugDescription)")
        Fuzzer.expect(IssueName.problem(with: issue.name) == nil, "issue name \(issue.name.debugDescription)")
        Fuzzer.expect(issue.date >= firstDay && issue.date < dayAfterLast,
                      "issue \(issue.name.debugDescription) dated \(issue.date.timeIntervalSince1970) s, outside years 1-9999 UTC")
        var paths = Set<String>()
        for asset in issue.allAssets {
            assets += 1
            let scheme = asset.url.scheme?.lowercased() ?? ""
            Fuzzer.expect(["http", "https"].contains(scheme), "asset URL \(asset.url) with a scheme the catalog may not use")
            Fuzzer.expect(RelativePath.problem(with: asset.path) == nil, "asset path \(asset.path.debugDescription) leaves the issue folder")
            Fuzzer.expect(paths.insert(asset.path).inserted, "two assets at \(asset.path.debugDescription)")
            Fuzzer.expect((asset.size ?? 0) >= 0, "asset size \(asset.size ?? 0)")
            Fuzzer.expect(asset.sha256.map { $0.count == 64 && $0.allSatisfy(\.isHexDigit) } ?? true, "sha256 \(asset.sha256 ?? "")")
        }
    }
    Fuzzer.expect(assets <= limits.maxAssets, "\(assets) assets, above the limit \(limits.maxAssets)")
    return 0
}
