import Foundation
import Testing
@testable import PaperboyConfig

/// Keeps `paperboy.example.toml` and `docs/Configuration.md` in step with the code.
@Suite(.timeLimit(.minutes(1))) struct DocumentationTests {
    static let repositoryRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let exampleFile = repositoryRoot.appendingPathComponent("paperboy.example.toml")
    static let environment = [
        "HOME": "/home/reader", "CDN_PASSWORD": "p", "CDN_TOKEN": "t", "KEY_PASSPHRASE": "k",
    ]

    @Test func exampleLoadsAsShipped() throws {
        let config = try PaperboyConfiguration.load(contentsOf: Self.exampleFile, environment: Self.environment)
        #expect(config.issues.first?.assets.count == 2)
        #expect(config.credentials.count == 2)
    }

    /// Uncomments every `# key = value` line, so each optional setting is checked too.
    @Test func exampleLoadsWithEveryOptionalSettingEnabled() throws {
        let text = try String(contentsOf: Self.exampleFile, encoding: .utf8)
        var enabledKeys: Set<String> = []
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map { line -> String in
            let indent = line.prefix { $0 == " " }
            let body = line.dropFirst(indent.count)
            guard body.hasPrefix("# "), let equals = body.range(of: " = ") else { return String(line) }
            let key = body[body.index(body.startIndex, offsetBy: 2)..<equals.lowerBound]
            guard !key.isEmpty, key.allSatisfy({ $0 == "_" || ("a"..."z").contains($0) || ("0"..."9").contains($0) }) else { return String(line) }
            enabledKeys.insert(String(key))
            return String(indent) + body.dropFirst(2)
        }
        let config = try PaperboyConfiguration.parse(
            lines.joined(separator: "\n"), fileURL: Self.exampleFile, environment: Self.environment
        )
        let asset = try #require(config.issues.first?.assets.first)
        #expect(asset.sha256 != nil && asset.unpack == .zip && asset.allowedNetworks == [.wired, .wifi])
        #expect(config.bandwidth.schedule.count == 3)
        #expect(config.network.assume != nil)

        let shipped = Set(["match", "name", "url", "scheme", "command", "date", "role"])
        let secretFiles = Set(["password_file", "token_file", "passphrase_file"])
        for (table, keys) in ConfigSchema.tables {
            for key in keys where !["assets"].contains(key) {
                #expect(
                    enabledKeys.contains(key) || shipped.contains(key) || secretFiles.contains(key)
                        && text.contains("(or: \(key) = "),
                    "paperboy.example.toml does not show \(table).\(key)"
                )
            }
        }
    }

    @Test func referenceDocumentsEveryKey() throws {
        let doc = try String(
            contentsOf: Self.repositoryRoot.appendingPathComponent("docs/Configuration.md"), encoding: .utf8
        )
        for (table, keys) in ConfigSchema.tables {
            let header = table.contains(".") || ["credentials", "feeds", "transports", "issues"].contains(table)
                ? "[[\(table)]]" : "[\(table)]"
            #expect(doc.contains("## `\(header)`") || doc.contains("### `\(header)`"), "no section for \(header)")
            for key in keys {
                #expect(doc.contains("| `\(key)` |"), "docs/Configuration.md does not document \(table).\(key)")
            }
        }
    }
}
