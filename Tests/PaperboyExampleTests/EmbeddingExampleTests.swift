#if canImport(Glibc)
import Glibc
#endif
import Foundation
import PaperboyTestServers
import PaperboyTesting
import Testing

/// The two embedding examples, run as an app would run them: Examples/Embedding with the engine
/// in process, Examples/DaemonEmbedding against a `paperboy daemon` the test starts; and the
/// two sources, which differ only in the line that opens the library.
@Suite("embedding examples, run", .serialized, .timeLimit(.minutes(2)))
struct EmbeddingExampleTests {
    let temporary = TempFolder(prefix: "paperboy-examples")
    var folder: URL { temporary.url }

    /// Runs a built example with `arguments`; its exit status and standard output.
    func run(_ example: String, _ arguments: [String]) async throws -> (status: Int32, output: String) {
        let output = folder.appendingPathComponent("\(example)-\(UUID().uuidString).out")
        let fd = open(output.path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        defer { close(fd) }
        let child = try ChildProcess(BuiltExecutable.url(named: example).path, arguments, standardOutput: fd, standardError: fd)
        await child.exited()
        return (child.terminationStatus, try String(contentsOf: output, encoding: .utf8))
    }

    @Test func theInProcessExampleDeliversTheIssueAndUpdatesTheShelf() async throws {
        let (status, output) = try await run("EmbeddingExample", [folder.path])
        #expect(status == 0, "\(output)")
        #expect(output.contains("saved \(folder.path)/library/Issues/2026-11-21/magazine.pdf"), "\(output)")
        #expect(output.contains(": delivered\n"), "\(output)")
        #expect(output.contains("2026-11-21: available, new: true, badge: 1"), "\(output)")
        #expect(output.contains("reading 2026-11-21, badge: 0"), "\(output)")
        let saved = try Data(contentsOf: folder.appendingPathComponent("library/Issues/2026-11-21/magazine.pdf"))
        #expect(saved.count == 3 << 20)
    }

    @Test func theDaemonExampleDoesTheSameThroughLibraryConnect() async throws {
        let runtime = folder.appendingPathComponent("runtime")
        mkdir(runtime.path, 0o700)
        let config = folder.appendingPathComponent("paperboy.toml")
        try Data("[library]\npath = \"library\"\n".utf8).write(to: config)
        let daemon = try await DaemonProcess(config: config, runtime: runtime, log: folder.appendingPathComponent("daemon.log"))
        let (status, output) = try await run("DaemonEmbeddingExample", [folder.path, daemon.socket.path])
        #expect(status == 0, "\(output)")
        #expect(output.contains("saved \(folder.path)/library/Issues/2026-11-21/magazine.pdf"), "\(output)")
        #expect(output.contains(": delivered\n"), "\(output)")
        #expect(output.contains("2026-11-21: available, new: true, badge: 1"), "\(output)")
        #expect(output.contains("reading 2026-11-21, badge: 0"), "\(output)")
        let saved = try Data(contentsOf: folder.appendingPathComponent("library/Issues/2026-11-21/magazine.pdf"))
        #expect(saved.count == 3 << 20)

        // Launched again: nothing to reconnect, nothing downloaded twice, the shelf as it was.
        let (again, second) = try await run("DaemonEmbeddingExample", [folder.path, daemon.socket.path])
        #expect(again == 0, "\(second)")
        #expect(!second.contains("saved") && !second.contains("reconnecting"), "\(second)")
        #expect(second.contains("2026-11-21: available, new: false, badge: 0"), "read at the first launch: \(second)")
        _ = await daemon.stop()
        #expect(daemon.process.terminationReason == .exit && daemon.process.terminationStatus == 0)
    }

    /// What the two examples may differ in, besides their header comments (the `//` lines before
    /// the first `import`, which describe each): the imports, the line that reads the socket
    /// argument (`let socket = …`) and the line that opens the library (`let library = …`).
    static func mayDiffer(_ line: String) -> Bool {
        line.hasPrefix("import ") || line.hasPrefix("let socket = ") || line.hasPrefix("let library = ")
    }

    /// The lines of an example after its header comment.
    static func body(_ example: String) throws -> [String] {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../Examples/\(example)/main.swift").standardized
        let lines = try String(contentsOf: url, encoding: .utf8).components(separatedBy: "\n")
        return Array(lines.drop { $0.hasPrefix("//") || $0.isEmpty })
    }

    @Test func theExamplesDifferOnlyInTheLineThatOpensTheLibrary() throws {
        let inProcess = try Self.body("Embedding")
        let daemon = try Self.body("DaemonEmbedding")
        let difference = daemon.difference(from: inProcess)
        var changed: [String] = []
        for change in difference {
            switch change {
            case .remove(_, let line, _): changed.append("- \(line)")
            case .insert(_, let line, _): changed.append("+ \(line)")
            }
        }
        let unexpected = changed.filter { !Self.mayDiffer(String($0.dropFirst(2))) }
        #expect(unexpected.isEmpty, "Examples/DaemonEmbedding differs from Examples/Embedding beyond the open line: \(unexpected)")
        #expect(changed.contains { $0.hasPrefix("+ let library = try await Library.connect(") }, "\(changed)")
        #expect(changed.count <= 5, "\(changed)")
    }
}
