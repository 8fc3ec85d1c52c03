import Foundation
import PaperboyTesting
import Testing

/// The publisher cycle through the tool: feeds, unpacking, covers, hooks, triggers, the shelf.
@Suite("paperboy publisher workflow", .timeLimit(.minutes(3)))
struct PublisherTests {
    let workspace = Workspace()
    static let repositoryRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// A catalog with one issue per `(name, date)`, each a PDF with its checksum under `content/`.
    @discardableResult
    func publish(_ issues: [(String, String)], catalog: String = "publisher/catalog.json") -> [String: Data] {
        var contents: [String: Data] = [:]
        var list: [String] = []
        for (name, date) in issues {
            let data = Data("issue \(name) \(UUID())".utf8)
            contents[name] = data
            _ = workspace.write(data, to: "publisher/content/\(name).pdf")
            list.append("""
                {"name": "\(name)", "date": "\(date)", "assets": [{"url": "content/\(name).pdf", "sha256": "\(sha256Hex(data))", "path": "magazine.pdf"}]}
                """)
        }
        _ = workspace.write("{\"issues\": [\(list.joined(separator: ", "))]}", to: catalog)
        return contents
    }

    func config(_ body: String) -> URL {
        workspace.write("[library]\npath = \"lib\"\n\n" + body, to: "paperboy.toml")
    }

    func shelf(_ file: URL) async throws -> [[String: Any]] {
        let result = try await CLI.run(["issues", "--json", "--config", file.path])
        #expect(result.status == 0, "\(result.stderr)")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        return try #require(json["issues"] as? [[String: Any]])
    }

    func exists(_ relative: String) -> Bool {
        FileManager.default.fileExists(atPath: workspace.path(relative).path)
    }

    @Test func theBundledExampleSyncsUnpacksAndSetsTheCover() async throws {
        let example = Self.repositoryRoot.appendingPathComponent("Examples/Publisher")
        for item in ["paperboy.toml", "catalog.json", "covers", "issues"] {
            try FileManager.default.copyItem(at: example.appendingPathComponent(item), to: workspace.path(item))
        }
        let file = workspace.path("paperboy.toml")
        let first = try await CLI.run(["sync", "--config", file.path])
        #expect(first.status == 0, "\(first.stderr)")
        #expect(first.stdout.contains("paperboy: issue 2026-11-21 is available"))
        #expect(first.stdout.contains("hook: issue 2026-11-21 is on the shelf, cover \(workspace.path("library/Issues/2026-11-21/cover.png").path)"))
        #expect(first.stderr.contains("feed 'gazette': 1 issue(s), 1 new"))
        let folder = "library/Issues/2026-11-21"
        #expect(try Data(contentsOf: workspace.path("\(folder)/magazine.pdf")).starts(with: Data("%PDF-1.4".utf8)))
        #expect(exists("\(folder)/articles/welcome.txt") && exists("\(folder)/index.json"))
        #expect(!exists("\(folder)/2026-11-21.zip"))
        let issues = try await shelf(file)
        #expect(issues.count == 1)
        #expect(issues.first?["status"] as? String == "available")
        #expect(issues.first?["isNew"] as? Bool == true)
        #expect(issues.first?["date"] as? String == "2026-11-21")
        #expect((issues.first?["coverPath"] as? String)?.hasSuffix("\(folder)/cover.png") == true)

        let second = try await CLI.run(["sync", "--config", file.path])
        #expect(second.status == 0)
        #expect(second.stdout.contains("nothing to do; 2 asset(s) already delivered"))
        #expect(!second.stdout.contains("hook:"))
    }

    @Test func aBrokenFeedIsReportedAndTheOtherFeedsAndIssuesStillSync() async throws {
        let good = publish([("2026-11-21", "2026-11-21")])
        _ = workspace.write("""
            {"issues": [{"name": "x", "date": "2026-11-21", "assets": [{"url": "x.pdf"}]},
                        {"name": "y", "date": "2026-11-21", "assets": [{"url": "y.pdf", "sha256": "abc"}]}]}
            """, to: "bad/catalog.json")
        _ = workspace.write(Data("static".utf8), to: "static.pdf")
        let file = config("""
            [[feeds]]
            name = "gone"
            url = "missing/catalog.json"

            [[feeds]]
            name = "bad"
            url = "bad/catalog.json"

            [[feeds]]
            name = "good"
            url = "publisher/catalog.json"

            [[issues]]
            name = "static"
            date = 2026-11-01
              [[issues.assets]]
              url = "static.pdf"
            """)
        let result = try await CLI.run(["sync", "--config", file.path])
        #expect(result.status == 1, "\(result.stdout) \(result.stderr)")
        #expect(result.stderr.contains("paperboy: feed 'gone' (\(workspace.path("missing/catalog.json").path)): cannot fetch the catalog"), "\(result.stderr)")
        #expect(result.stderr.contains("paperboy: feed 'bad' (\(workspace.path("bad/catalog.json").path)): issues[1].assets[0].sha256: expected 64 hex digits"), "\(result.stderr)")
        #expect(try Bytes(Data(contentsOf: workspace.path("lib/Issues/2026-11-21/magazine.pdf"))) == Bytes(good["2026-11-21"] ?? Data()))
        #expect(exists("lib/Issues/static/static.pdf"))
        // Nothing of the broken catalog was added.
        #expect(!exists("lib/Issues/x"))
    }

    @Test func aZipSlipArchiveFromAFeedIsRefusedWithNothingLeft() async throws {
        let archive = try await workspace.zip([("ok.txt", "ok"), ("../../escape.txt", "bad")], to: "publisher/evil.zip")
        let sha = sha256Hex(try Data(contentsOf: archive))
        _ = workspace.write("""
            {"issues": [{"name": "evil", "date": "2026-11-21", "assets": [{"url": "evil.zip", "sha256": "\(sha)", "unpack": "zip"}]}]}
            """, to: "publisher/catalog.json")
        let file = config("[[feeds]]\nname = \"p\"\nurl = \"publisher/catalog.json\"\n")
        let result = try await CLI.run(["sync", "--config", file.path])
        #expect(result.status == 1)
        let failed = result.stderr.split(separator: "\n").filter { $0.hasPrefix("failed: evil/evil.zip") }
        #expect(failed.count == 1 && failed[0].contains("'..'"), "\(result.stderr)")
        #expect(!exists("lib/escape.txt") && !exists("escape.txt") && !exists("lib/Issues/escape.txt"))
        let left = (try? FileManager.default.contentsOfDirectory(atPath: workspace.path("lib/Issues/evil").path)) ?? []
        #expect(left.isEmpty, "\(left)")
        #expect(try await shelf(file).first?["status"] as? String == "none")
    }

    @Test func anArchiveAboveTheConfiguredUnpackLimitFailsNamingTheSizes() async throws {
        try await workspace.zip([("page.txt", String(repeating: "x", count: 2_000))], to: "big.zip")
        let file = config("max_unpacked_size = \"1KB\"\n[[issues]]\nname = \"big\"\ndate = 2026-11-21\n[[issues.assets]]\nurl = \"big.zip\"\nunpack = \"zip\"\n")
        let result = try await CLI.run(["sync", "--config", file.path])
        #expect(result.status == 1)
        let failed = result.stderr.split(separator: "\n").filter { $0.hasPrefix("failed: big/big.zip") }
        #expect(failed.count == 1 && failed[0].contains("declares 2000 bytes unpacked; the limit for one archive is 1000 bytes"), "\(result.stderr)")
        #expect(!exists("lib/Issues/big/page.txt"))
    }

    @Test func notifyIsThrottledAcrossRestartsUnlessOverridden() async throws {
        publish([("2026-11-21", "2026-11-21")])
        let feeds = "[[feeds]]\nname = \"p\"\nurl = \"publisher/catalog.json\"\n"
        let file = config(feeds + "[notifications]\nthrottle = \"1h\"\n")

        let ignored = try await CLI.run(["notify", "--payload", #"{"aps": {"alert": "hello"}}"#, "--config", file.path])
        #expect(ignored.status == 0)
        #expect(ignored.stdout.contains("does not say content-available: 1"))
        #expect(!exists("lib/Issues/2026-11-21"))

        let first = try await CLI.run(["notify", "--payload", #"{"aps": {"content-available": 1}}"#, "--config", file.path])
        #expect(first.status == 0, "\(first.stderr)")
        #expect(exists("lib/Issues/2026-11-21/magazine.pdf"))

        // A new issue appears; each run is a new process, and the throttle holds.
        publish([("2026-11-21", "2026-11-21"), ("2026-11-22", "2026-11-22")])
        let second = try await CLI.run(["notify", "--config", file.path])
        #expect(second.status == 0)
        #expect(second.stdout.contains("throttled; the next refresh is allowed at"), "\(second.stdout)")
        #expect(second.stdout.contains("(in 59 min") || second.stdout.contains("(in 1 h"), "\(second.stdout)")
        #expect(!exists("lib/Issues/2026-11-22"))

        let override = config(feeds + "[notifications]\nthrottle = \"1h\"\ndont_throttle = true\n")
        let third = try await CLI.run(["notify", "--config", override.path])
        #expect(third.status == 0, "\(third.stderr)")
        #expect(exists("lib/Issues/2026-11-22/magazine.pdf"))

        let bad = try await CLI.run(["notify", "--payload", "{not json", "--config", file.path])
        #expect(bad.status == 2)
    }

    @Test func purgeNeverRemovesTheIssueBeingReadNorBringsPurgedIssuesBack() async throws {
        publish([("a", "2026-11-01"), ("b", "2026-11-08"), ("c", "2026-11-15"), ("d", "2026-11-22")])
        let file = config("[[feeds]]\nname = \"p\"\nurl = \"publisher/catalog.json\"\n")
        #expect(try await CLI.run(["sync", "-q", "--config", file.path]).status == 0)

        let read = try await CLI.run(["read", "a", "--config", file.path])
        #expect(read.status == 0, "\(read.stderr)")
        let keep = try await CLI.run(["purge", "--keep", "2", "--config", file.path])
        #expect(keep.status == 0, "\(keep.stderr)")
        #expect(keep.stdout.contains("removed b") && keep.stdout.contains("removed c"), "\(keep.stdout)")
        #expect(try await shelf(file).map { $0["name"] as? String } == ["d", "a"])

        let budget = try await CLI.run(["purge", "--budget", "0", "--config", file.path])
        #expect(budget.status == 0)
        let left = try await shelf(file)
        #expect(left.map { $0["name"] as? String } == ["a"])
        #expect(left.first?["isReading"] as? Bool == true)
        #expect(exists("lib/Issues/a/magazine.pdf") && !exists("lib/Issues/d"))

        // The feed still lists the purged issues: they stay purged.
        let again = try await CLI.run(["sync", "--config", file.path])
        #expect(again.status == 0)
        #expect(try await shelf(file).count == 1)

        let usage = try await CLI.run(["purge", "--config", file.path])
        #expect(usage.status == 2)
        let badSize = try await CLI.run(["purge", "--budget", "lots", "--config", file.path])
        #expect(badSize.status == 2)
    }

    @Test func theHookGetsTheIssueInItsEnvironment() async throws {
        publish([("2026-11-21", "2026-11-21")])
        _ = workspace.write(Data("png".utf8), to: "publisher/cover.png")
        let catalog = try String(contentsOf: workspace.path("publisher/catalog.json"), encoding: .utf8)
        _ = workspace.write(catalog.replacingOccurrences(of: "\"assets\"", with: "\"cover\": \"cover.png\", \"assets\""),
                            to: "publisher/catalog.json")
        let hook = workspace.write("#!/bin/sh\nenv | grep '^PAPERBOY_' | sort > \"hook-$PAPERBOY_ISSUE.env\"\n", to: "hooks/record.sh")
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: hook.path)
        let file = config("""
            [hooks]
            on_issue_available = ["hooks/record.sh"]

            [[feeds]]
            name = "p"
            url = "publisher/catalog.json"
            """)
        let result = try await CLI.run(["sync", "--config", file.path])
        #expect(result.status == 0, "\(result.stderr)")
        // Run in the configuration's folder.
        let env = try String(contentsOf: workspace.path("hook-2026-11-21.env"), encoding: .utf8)
        let folder = workspace.path("lib/Issues/2026-11-21").path
        #expect(env.contains("PAPERBOY_ISSUE=2026-11-21\n"), "\(env)")
        #expect(env.contains("PAPERBOY_ISSUE_PATH=\(folder)\n"), "\(env)")
        #expect(env.contains("PAPERBOY_COVER=\(folder)/cover.png\n"), "\(env)")
        #expect(env.contains("PAPERBOY_BADGE=1\n"), "\(env)")
        #expect(env.contains("PAPERBOY_ISSUE_DATE=2026-11-21\n"), "\(env)")

        // Only once: the issue was already available at the next sync.
        try FileManager.default.removeItem(at: workspace.path("hook-2026-11-21.env"))
        #expect(try await CLI.run(["sync", "--config", file.path]).status == 0)
        #expect(!exists("hook-2026-11-21.env"))
    }

    @Test func theHookDoesNotSeeSecretVariablesButKeepsOrdinaryOnes() async throws {
        publish([("2026-11-21", "2026-11-21")])
        let hook = workspace.write("#!/bin/sh\nenv > \"hook-$PAPERBOY_ISSUE.env\"\n", to: "hooks/record.sh")
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: hook.path)
        let file = config("""
            [hooks]
            on_issue_available = ["hooks/record.sh"]

            [[credentials]]
            match = "https://cdn.example.com/"
            username = "alice"
            password_env = "PAPERBOY_TEST_HOOK_PASSWORD"
            token_env = "PAPERBOY_TEST_HOOK_TOKEN"

            [[feeds]]
            name = "p"
            url = "publisher/catalog.json"
            """)
        let result = try await CLI.run(["sync", "--config", file.path], environment: [
            "PAPERBOY_TEST_HOOK_PASSWORD": "hunter2-secret", "PAPERBOY_TEST_HOOK_TOKEN": "token-secret",
            "PAPERBOY_TEST_PLAIN": "plain",
        ])
        #expect(result.status == 0, "\(result.stderr)")
        let env = try String(contentsOf: workspace.path("hook-2026-11-21.env"), encoding: .utf8)
        #expect(!env.contains("hunter2-secret"))
        #expect(!env.contains("token-secret"))
        #expect(!env.contains("PAPERBOY_TEST_HOOK_PASSWORD"))
        #expect(env.contains("PATH="))
        #expect(env.contains("PAPERBOY_TEST_PLAIN=plain\n"))
        #expect(env.contains("PAPERBOY_ISSUE=2026-11-21\n"))
    }

    @Test func aFailingHookIsReportedAndTheIssueStaysAvailable() async throws {
        publish([("2026-11-21", "2026-11-21")])
        let file = config("""
            [hooks]
            on_issue_available = ["sh", "-c", "exit 3"]

            [[feeds]]
            name = "p"
            url = "publisher/catalog.json"
            """)
        let result = try await CLI.run(["sync", "--config", file.path])
        #expect(result.status == 1)
        #expect(result.stderr.contains("paperboy: hook 'sh -c exit 3' for issue '2026-11-21' exited with status 3; the issue stays available"),
                "\(result.stderr)")
        #expect(try await shelf(file).first?["status"] as? String == "available")
    }

    @Test func addDownloadsIntoAnIssueAndReadAndIssuesShowIt() async throws {
        let data = Data("a single article".utf8)
        _ = workspace.write(data, to: "incoming/article.pdf")
        let file = config("")
        let added = try await CLI.run(["add", "incoming/article.pdf", "--issue", "extra", "--date", "2026-01-02",
                                       "--sha256", sha256Hex(data), "--path", "articles/one.pdf", "--config", file.path],
                                      in: workspace.url)
        #expect(added.status == 0, "\(added.stderr)")
        #expect(try Bytes(Data(contentsOf: workspace.path("lib/Issues/extra/articles/one.pdf"))) == Bytes(data))
        var issues = try await shelf(file)
        #expect(issues.first?["name"] as? String == "extra")
        #expect(issues.first?["date"] as? String == "2026-01-02")
        #expect(issues.first?["isNew"] as? Bool == true)
        #expect(issues.first?["isReading"] as? Bool == false)

        let text = try await CLI.run(["issues", "--config", file.path])
        #expect(text.stdout.contains("extra  2026-01-02  available"), "\(text.stdout)")
        #expect(text.stdout.contains("1 issue(s), 1 new"))

        #expect(try await CLI.run(["read", "extra", "--config", file.path]).status == 0)
        issues = try await shelf(file)
        #expect(issues.first?["isReading"] as? Bool == true)
        #expect(issues.first?["isNew"] as? Bool == false)

        let missing = try await CLI.run(["read", "nope", "--config", file.path])
        #expect(missing.status == 1)
        #expect(missing.stderr.contains("no issue named 'nope'"))

        let wrong = try await CLI.run(["add", workspace.path("incoming/article.pdf").path, "--issue", "extra",
                                       "--path", "again.pdf", "--sha256", String(repeating: "0", count: 64), "--config", file.path])
        #expect(wrong.status == 1)
        #expect(wrong.stderr.contains("failed: extra/again.pdf"))
        let usage = try await CLI.run(["add", "x.pdf", "--issue", "extra", "--sha256", "abc", "--config", file.path])
        #expect(usage.status == 2)
        // A refused URL is named without its password.
        let secret = try await CLI.run(["add", "https://reader:s3cret-pw@cdn.example.com/a b.pdf", "--issue", "extra", "--config", file.path])
        #expect(secret.status == 2)
        #expect(secret.stderr.contains("contains a space"), "\(secret.stderr)")
        #expect(!secret.stderr.contains("s3cret-pw"), "\(secret.stderr)")
    }

    /// `paperboy add`'s `--path` and `--issue` become paths in the library: one that climbs out
    /// or is not one name is refused, naming the argument's value, and nothing is written.
    @Test func addRefusesAPathOrAnIssueNameLeavingTheIssueFolder() async throws {
        _ = workspace.write(Data("an article".utf8), to: "incoming/article.pdf")
        let file = config("")
        let cases: [(arguments: [String], problem: String)] = [
            (["--issue", "extra", "--path", "../../escaped.pdf"], "'../../escaped.pdf' must not contain '..'"),
            (["--issue", "extra", "--path", "/tmp/escaped.pdf"], "--path '/tmp/escaped.pdf' is absolute; it must be relative to the issue folder"),
            (["--issue", "..", "--path", "escaped.pdf"], "'..'"),
            (["--issue", "../lib", "--path", "escaped.pdf"], "'../lib' must not"),
            (["--issue", "a/b", "--path", "escaped.pdf"], "'a/b' must not contain '/'"),
            // Issue 26: accepted by the library's copy of the rules (which `add` reached at sync
            // time), refused by the archive's (`\`) and the configuration's (C1 controls).
            (["--issue", "extra", "--path", "pages\\escaped.pdf"], "--path 'pages\\escaped.pdf' must not contain '\\'"),
            (["--issue", "a\u{85}b", "--path", "escaped.pdf"], "--issue 'a\\u{85}b' must not contain NUL, control or bidi characters"),
        ]
        for (arguments, problem) in cases {
            let result = try await CLI.run(["add", "incoming/article.pdf"] + arguments + ["--config", file.path], in: workspace.url)
            #expect(result.status != 0, "\(arguments): \(result.stdout)")
            #expect(result.stderr.contains(problem), "\(arguments): \(result.stderr)")
        }
        #expect(!exists("escaped.pdf") && !exists("lib/escaped.pdf") && !exists("lib/Issues/escaped.pdf"))
        #expect(!exists("lib/Issues/extra/pages\\escaped.pdf") && !exists("lib/Issues/a\u{85}b"))
        #expect(!FileManager.default.fileExists(atPath: "/tmp/escaped.pdf"))
        // The issue named by the refused paths may be there, empty; no other.
        let issues = try await shelf(file)
        #expect(issues.compactMap { $0["name"] as? String }.allSatisfy { $0 == "extra" }, "\(issues)")
        #expect((try? FileManager.default.contentsOfDirectory(atPath: workspace.path("lib/Issues/extra").path))?.isEmpty ?? true)
    }

    @Test func statusJSONSchemaIsUnchanged() async throws {
        publish([("2026-11-21", "2026-11-21")])
        let file = config("[[feeds]]\nname = \"p\"\nurl = \"publisher/catalog.json\"\n")
        #expect(try await CLI.run(["sync", "-q", "--config", file.path]).status == 0)
        let result = try await CLI.run(["status", "--json", "--config", file.path])
        let json = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        #expect(Set(json.keys).isSubset(of: ["libraryPath", "issues", "bandwidth"]) && json["libraryPath"] is String)
        let issue = try #require((json["issues"] as? [[String: Any]])?.first)
        #expect(Set(issue.keys) == ["name", "date", "status", "isNew", "contentPath", "assets"])
        let asset = try #require((issue["assets"] as? [[String: Any]])?.first)
        #expect(Set(asset.keys) == ["id", "url", "state", "bytesWritten", "expectedBytes", "path", "attempts"])
        #expect(asset["path"] as? String == "magazine.pdf")
    }
}
