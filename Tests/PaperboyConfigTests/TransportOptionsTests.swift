import Foundation
import Testing
@testable import PaperboyConfig

/// `options = { key = "value" }` on assets, `[[transports]]` entries and catalog assets.
@Suite(.timeLimit(.minutes(1))) struct TransportOptionsTests {
    static let header = "[[issues]]\nname = \"a\"\ndate = 2026-01-01\n[[issues.assets]]\nurl = \"ftp://files.example.com/a.pdf\"\n"

    @Test func optionsAreReadFromAssetsAndTransports() throws {
        let config = try PaperboyConfiguration.parse("""
            [[transports]]
            scheme = "ftp"
            command = ["paperboy-transport-ftp"]
            options = { mode = "passive", region = "eu-west-1" }
            \(Self.header)options = { mode = "active", "x.y-z" = "" }
            """, fileURL: fixtureFile, environment: fixtureEnvironment)
        #expect(config.transports.first?.options == ["mode": "passive", "region": "eu-west-1"])
        #expect(config.issues.first?.assets.first?.options == ["mode": "active", "x.y-z": ""])
    }

    static let malformed: [(name: String, options: String, key: String, message: String)] = [
        ("a number", "{ port = 21 }", "options.port", "expected a string, got an integer"),
        ("not a table", "\"passive\"", "options", "expected a table of strings"),
        ("a reserved key", "{ ca_file = \"/tmp/evil.pem\" }", "options.ca_file", "'ca_file' is set by the core from [[credentials]]"),
        ("a user name", "{ username = \"reader\" }", "options.username", "'username' is set by the core from [[credentials]]"),
        ("a secret", "{ api_token = \"abc\" }", "options.api_token", "options never hold secrets"),
        ("a long value", "{ note = \"\(String(repeating: "x", count: 1025))\" }", "options.note",
         "the value of 'note' has 1025 bytes; at most 1024 are allowed"),
        ("a control character", "{ note = \"a\\u001Bb\" }", "options.note", "the value of 'note' contains control characters"),
        ("too many", "{ " + (0...64).map { "k\($0) = \"v\"" }.joined(separator: ", ") + " }", "options",
         "65 options; at most 64 are allowed"),
    ]

    @Test(arguments: malformed.indices)
    func malformedOptionsNameTheFileLineAndKey(_ index: Int) throws {
        let bad = Self.malformed[index]
        do {
            _ = try PaperboyConfiguration.parse(Self.header + "options = \(bad.options)\n", fileURL: fixtureFile, environment: fixtureEnvironment)
            Issue.record("\(bad.name): expected an error")
        } catch {
            #expect(error.line == 6, "\(bad.name): \(error)")
            #expect(error.key == "issues[0].assets[0].\(bad.key)", "\(bad.name): \(error)")
            #expect(error.description.contains("paperboy.toml:6:"), "\(bad.name): \(error)")
            #expect(error.description.contains(bad.message), "\(bad.name): \(error)")
        }
    }

    @Test func aTransportEntryChecksItsOptionsToo() throws {
        do {
            _ = try PaperboyConfiguration.parse("""
                [[transports]]
                scheme = "ftp"
                command = ["paperboy-transport-ftp"]
                options = { password = "hunter2" }
                """, fileURL: fixtureFile, environment: fixtureEnvironment)
            Issue.record("expected an error")
        } catch {
            #expect(error.key == "transports[0].options.password")
            #expect(error.description.contains("options never hold secrets"))
            #expect(!error.description.contains("hunter2"))
        }
    }

    @Test func catalogAssetsCarryOptionsCheckedTheSameWay() throws {
        let url = URL(string: "https://news.example.com/catalog.json")!
        let catalog = try Catalog.parse(Data("""
            {"issues": [{"name": "a", "date": "2026-11-21", "assets": [{"url": "a.pdf", "options": {"mode": "passive"}}]}]}
            """.utf8), feed: "daily", url: url)
        #expect(catalog.issues.first?.assets.first?.options == ["mode": "passive"])
        #expect(catalog.issues.first?.entry.assets.first?.options == ["mode": "passive"])
        for (options, message) in [("{\"ca_file\": \"/tmp/evil.pem\"}", "'ca_file' is set by the core"),
                                   ("{\"mode\": 1}", "expected a string, got a number"),
                                   ("[\"mode\"]", "expected an object of strings, got an array")] {
            #expect {
                try Catalog.parse(Data("""
                    {"issues": [{"name": "a", "date": "2026-11-21", "assets": [{"url": "a.pdf", "options": \(options)}]}]}
                    """.utf8), feed: "daily", url: url)
            } throws: { error in
                let text = "\(error)"
                return text.contains("issues[0].assets[0].options") && text.contains(message)
            }
        }
    }

    /// Issue 26, case 7: the reserved and secret-looking keys in other letter cases, which a helper
    /// reading its options without regard to case would take for the core's.
    static let otherSpellings: [(key: String, message: String)] = [
        ("CA_FILE", "is set by the core from [[credentials]]"), ("Ca_File", "is set by the core from [[credentials]]"),
        ("KNOWN_HOSTS", "is set by the core from [[credentials]]"), ("Private_Key", "is set by the core from [[credentials]]"),
        ("USER", "is set by the core from [[credentials]]"), ("Username", "is set by the core from [[credentials]]"),
        ("API_Token", "options never hold secrets"), ("PassWord", "options never hold secrets"),
    ]

    @Test(arguments: otherSpellings.indices)
    func reservedAndSecretKeysAreRefusedInEveryLetterCase(_ index: Int) throws {
        let (key, message) = Self.otherSpellings[index]
        do {
            let config = try PaperboyConfiguration.parse(Self.header + "options = { \(key) = \"/tmp/evil.pem\" }\n",
                                                         fileURL: fixtureFile, environment: fixtureEnvironment)
            Issue.record("\(key) was accepted in paperboy.toml: \(config.issues.first?.assets.first?.options ?? [:])")
        } catch {
            #expect(error.key == "issues[0].assets[0].options.\(key)", "\(error)")
            #expect(error.description.contains(message), "\(error)")
        }
        do {
            let catalog = try Catalog.parse(Data("""
                {"issues": [{"name": "a", "date": "2026-11-21", "assets": [{"url": "a.pdf", "options": {"\(key)": "/tmp/evil.pem"}}]}]}
                """.utf8), feed: "daily", url: URL(string: "https://news.example.com/catalog.json")!)
            Issue.record("\(key) was accepted in a catalog: \(catalog.issues.first?.assets.first?.options ?? [:])")
        } catch {
            #expect("\(error)".contains("issues[0].assets[0].options.\(key)"), "\(error)")
            #expect("\(error)".contains(message), "\(error)")
        }
    }
}
