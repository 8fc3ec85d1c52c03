import Foundation
import Testing

/// The module table in docs/Architecture.md and the README's layout name every module the
/// package builds from `Sources/` and `Plugins/` (issue 28): a new module cannot go unlisted.
@Suite(.timeLimit(.minutes(1))) struct ModuleDocumentationTests {
    static let root = DocumentationTests.repositoryRoot

    /// Every module folder: `Sources/<Module>` and `Plugins/<Transport>/<Module>`.
    static func modules() throws -> [String] {
        let files = FileManager.default
        var names = try files.contentsOfDirectory(atPath: root.appendingPathComponent("Sources").path)
        for plugin in try files.contentsOfDirectory(atPath: root.appendingPathComponent("Plugins").path) {
            names += try files.contentsOfDirectory(atPath: root.appendingPathComponent("Plugins/\(plugin)").path)
        }
        return names.filter { !$0.hasPrefix(".") }.sorted()
    }

    @Test func architectureTableHasARowPerModule() throws {
        let doc = try String(contentsOf: Self.root.appendingPathComponent("docs/Architecture.md"), encoding: .utf8)
        let modules = try Self.modules()
        #expect(modules.count >= 16)
        for module in modules {
            #expect(doc.contains("| `\(module)` |"), "docs/Architecture.md has no row for \(module)")
        }
    }

    @Test func readmeLayoutNamesEveryModule() throws {
        let readme = try String(contentsOf: Self.root.appendingPathComponent("README.md"), encoding: .utf8)
        let layout = try #require(readme.components(separatedBy: "## Layout").dropFirst().first?
            .components(separatedBy: "```").dropFirst().first)
        for module in try Self.modules() {
            #expect(layout.range(of: "\\b\(module)\\b", options: .regularExpression) != nil,
                    "the README's layout does not name \(module)")
        }
    }
}
