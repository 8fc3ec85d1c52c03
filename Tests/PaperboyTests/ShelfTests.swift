import Foundation
import Testing
@testable import Paperboy
import PaperboyTesting

@Suite("Shelf: unpack, cover, triggers, purge", .timeLimit(.minutes(2)))
struct ShelfTests {
    let folder = TempFolder()
    var root: URL { folder.file("library") }

    typealias Item = ZipItem

    func zip(_ items: [Item]) throws -> Data {
        try makeZip(items)
    }

    func deliver(_ archive: Data, into issueName: String = "i",
                 configuration: Library.Configuration = Library.Configuration.forTests()) async throws -> (Library, Paperboy.Issue, AssetDownload) {
        let transport = InMemoryTransport()
        let url = transport.serve(archive, at: "issue.zip")
        let library = try Library.open(at: root, transports: TransportRegistry([transport]), configuration: configuration)
        let issue = try await library.addIssue(name: issueName, date: Date())
        let asset = try await issue.addAsset(AssetRequest(url: url, sha256: sha256Hex(archive), unpack: .zip))
        try await asset.download()
        await library.waitUntilIdle()
        return (library, issue, asset)
    }

    func contents(_ folder: URL) -> [String] {
        (FileManager.default.enumerator(atPath: folder.path)?.allObjects as? [String] ?? []).sorted()
    }

    @Test func aZipIsExtractedIntoTheIssueFolderAndRemoved() async throws {
        let page = randomData(200_000)
        let archive = try zip([.directory("pages/"), .file("pages/1.pdf", page), .file("index.json", Data("{}".utf8)),
                               .link("latest.pdf", "pages/1.pdf")])
        let (library, issue, asset) = try await deliver(archive)
        #expect(asset.state == .delivered)
        #expect(try Bytes(Data(contentsOf: issue.contentURL.appendingPathComponent("pages/1.pdf"))) == Bytes(page))
        #expect(try Bytes(Data(contentsOf: issue.contentURL.appendingPathComponent("latest.pdf"))) == Bytes(page))
        #expect(contents(issue.contentURL) == ["index.json", "latest.pdf", "pages", "pages/1.pdf"])
        let mode = try FileManager.default.attributesOfItem(atPath: issue.contentURL.appendingPathComponent("pages/1.pdf").path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        #expect(try FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent(".inbox").path).isEmpty)
        #expect(issue.status == .available)
        await library.close()
    }

    static let maliciousArchives: [(String, [Item], String)] = [
        ("zip-slip", [Item.file("ok.txt", Data("ok".utf8)), .file("../escape.txt", Data("bad".utf8))], "must not contain '..'"),
        ("deep zip-slip", [.file("a/../../escape.txt", Data("bad".utf8))], "'..'"),
        ("absolute", [.file("/tmp/paperboy-absolute.txt", Data("bad".utf8))], "absolute"),
        ("Windows path", [.file("ok.txt", Data("ok".utf8)), .file("pages\\escape.txt", Data("bad".utf8))], "must not contain '\\'"),
        // Issue 26: entries the archive's copy of the rule let through, refused by the configuration's.
        ("C1 control", [.file("ok.txt", Data("ok".utf8)), .file("a\u{85}b.txt", Data("bad".utf8))],
         "'a\\u{85}b.txt' must not contain NUL, control or bidi characters"),
        ("only dots", [.file(".../escape.txt", Data("bad".utf8))], "has a component of only dots and spaces"),
        ("link out", [.file("ok.txt", Data("ok".utf8)), .link("out", "../../../../etc")], "outside the issue folder"),
        ("absolute link", [.link("passwd", "/etc/passwd")], "absolute path"),
        ("below a link", [.link("dir", "sub"), .directory("sub/"), .file("dir/file.txt", Data("x".utf8))], "below the symbolic link"),
        // Each link alone looks inside; resolved against the others, r, s and t climb out.
        ("chained links", [.link("p/q", ".."), .link("r", "p/q/.."), .link("s", "r/.."), .link("t", "s/..")],
         "'r' ('p/q/..') goes through the archive link 'p/q'"),
        ("link to a link", [.file("page.pdf", Data("x".utf8)), .link("a", "page.pdf"), .link("b", "a")], "through the archive link 'a'"),
        ("dangling link", [.file("page.pdf", Data("x".utf8)), .link("latest.pdf", "missing.pdf")], "does not lead to a file or folder of the archive"),
        ("link through a file", [.file("page.pdf", Data("x".utf8)), .link("up", "page.pdf/..")], "does not lead to a file or folder"),
    ]

    @Test(arguments: maliciousArchives)
    func maliciousArchivesAreRefusedWithNothingLeft(_ name: String, _ items: [Item], _ message: String) async throws {
        let (library, issue, asset) = try await deliver(try zip(items))
        guard case .failed(let detail) = asset.state else {
            Testing.Issue.record("\(name): expected a failure, got \(asset.state)")
            return
        }
        #expect(detail.contains(message), "\(name): \(detail)")
        #expect(contents(issue.contentURL).isEmpty, "\(name) left \(contents(issue.contentURL))")
        #expect(!FileManager.default.fileExists(atPath: folder.url.deletingLastPathComponent().appendingPathComponent("escape.txt").path))
        #expect(!FileManager.default.fileExists(atPath: "/tmp/paperboy-absolute.txt"))
        await library.close()
    }

    @Test func aDamagedArchiveFailsAndLeavesNothing() async throws {
        var archive = try zip([.file("a.txt", randomData(50_000))])
        for index in 1_000..<1_100 { archive[index] ^= 0xFF }
        let (library, issue, asset) = try await deliver(archive)
        guard case .failed = asset.state else {
            Testing.Issue.record("expected failure, got \(asset.state)")
            return
        }
        #expect(contents(issue.contentURL).isEmpty)
        await library.close()
    }

    @Test func aCoverAssetSetsTheCover() async throws {
        let transport = InMemoryTransport()
        let url = transport.serve(Data("png".utf8), at: "cover.png")
        let library = try Library.open(at: root, transports: TransportRegistry([transport]), configuration: Library.Configuration.forTests())
        let issue = try await library.addIssue(name: "i", date: Date())
        #expect(issue.coverURL == nil)
        try await issue.addAsset(AssetRequest(url: url, destinationPath: "art/cover.png", role: .cover)).download()
        await library.waitUntilIdle()
        #expect(issue.coverURL == issue.contentURL.appendingPathComponent("art/cover.png"))
        await library.close()
    }

    @Test func contentAvailableIsThrottledAcrossRestartsUnlessOverridden() async throws {
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        var library = try Library.open(at: root, transports: TransportRegistry(), configuration: Library.Configuration.forTests())
        await #expect(try library.contentAvailable(payload: ["aps": ["content-available": 1]], now: start) == .refresh)
        await #expect(try library.contentAvailable(payload: ["content-available": 1], now: start.addingTimeInterval(3600))
            == .throttled(nextAllowed: start.addingTimeInterval(86_400)))
        await #expect(try library.contentAvailable(payload: ["alert": "hello"], now: start) == .ignored)
        await library.close()
        library = try Library.open(at: root, transports: TransportRegistry(), configuration: Library.Configuration.forTests())
        #expect(library.lastContentRefresh == start)
        await #expect(try library.contentAvailable(now: start.addingTimeInterval(7200)) == .throttled(nextAllowed: start.addingTimeInterval(86_400)))
        await #expect(try library.contentAvailable(dontThrottle: true, now: start.addingTimeInterval(7200)) == .refresh)
        await #expect(try library.contentAvailable(now: start.addingTimeInterval(7200 + 86_400)) == .refresh)
        await library.close()
    }

    @Test func purgeRemovesTheOldestButNeverTheCurrentlyReadingIssue() async throws {
        let transport = InMemoryTransport()
        let library = try Library.open(at: root, transports: TransportRegistry([transport]), configuration: Library.Configuration.forTests())
        for day in 1...5 {
            let url = transport.serve(randomData(100_000, seed: UInt64(day)), at: "d\(day)")
            let issue = try await library.addIssue(name: "day\(day)", date: Date(timeIntervalSince1970: Double(day) * 86_400))
            try await issue.addAsset(AssetRequest(url: url, destinationPath: "content.bin")).download()
        }
        await library.waitUntilIdle()
        try await library.setCurrentlyReadingIssue(library.issue(named: "day1"))
        let removed = try await library.purge(keep: 3)
        #expect(removed == ["day2", "day3"])
        #expect(library.issues.map(\.name) == ["day5", "day4", "day1"])
        let byBudget = try await library.purge(budgetBytes: 250_000)  // day1 is kept and counts
        #expect(byBudget == ["day4"])
        #expect(library.issues.map(\.name) == ["day5", "day1"])
        #expect(try await FileManager.default.fileExists(atPath: library.issue(named: "day1")!.contentURL.appendingPathComponent("content.bin").path))
        await library.close()
    }
}
