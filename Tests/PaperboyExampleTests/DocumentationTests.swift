#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Paperboy
import PaperboyExec
import PaperboyTransportTesting
import Testing

/// Keeps the examples of docs/WritingTransports.md compiling and working.
@Suite("WritingTransports.md", .timeLimit(.minutes(2)))
struct DocumentationTests {
    static let root = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The fenced code block that follows `marker` in the guide.
    static func block(after marker: String) throws -> String {
        let guide = try String(contentsOf: root.appendingPathComponent("docs/WritingTransports.md"), encoding: .utf8)
        let start = try #require(guide.range(of: marker), "no \(marker) in the guide")
        let fence = try #require(guide.range(of: "```", range: start.upperBound..<guide.endIndex))
        let bodyStart = try #require(guide.range(of: "\n", range: fence.upperBound..<guide.endIndex)).upperBound
        let end = try #require(guide.range(of: "\n```\n", range: bodyStart..<guide.endIndex))
        return String(guide[bodyStart..<end.lowerBound]) + "\n"
    }

    @Test func theSwiftExampleIsTheCompiledTarTransport() throws {
        let shown = try Self.block(after: "<!-- verbatim: Examples/TarTransport/TarTransport.swift -->")
        let compiled = try String(contentsOf: Self.root.appendingPathComponent("Examples/TarTransport/TarTransport.swift"), encoding: .utf8)
        #expect(shown == compiled, "update the guide: its copy of TarTransport.swift differs from the file")
    }

    static let supported: [TransportConformance.Check] = [
        .fullDownload, .resume, .changedValidatorRestarts, .notFound, .backPressure, .cancellation,
    ]

    @Test("the guide's smallest helper passes the conformance suite", arguments: supported)
    func thePythonHelperOfTheGuideConforms(_ check: TransportConformance.Check) async throws {
        let fixture = FolderFixture { file in
            URL(string: "folder://\(file.deletingLastPathComponent().lastPathComponent)/\(file.lastPathComponent)")!
        }
        let helper = fixture.folder.deletingLastPathComponent().appendingPathComponent("paperboy-transport-folder-\(UUID().uuidString)")
        try Data(try Self.block(after: "<!-- conformance: folder -->").utf8).write(to: helper)
        chmod(helper.path, 0o755)
        defer { try? FileManager.default.removeItem(at: helper) }
        var environment = ProcessInfo.processInfo.environment
        environment["FOLDER_ROOT"] = fixture.folder.deletingLastPathComponent().path
        let transport = ExecTransport(scheme: "folder", command: [helper.path], environment: environment)
        #expect(await TransportConformance(transport, fixture: fixture).run(check) == .passed)
        transport.retireIdleHelpers()
    }
}
