#if canImport(Glibc)
import Glibc
#endif
import Foundation
import PaperboyTestServers
import PaperboyTesting
import Testing

/// The two embedding examples, run as an app would run them: Examples/Embedding with the engine
/// in process, Examples/DaemonEmbedding against a `paperboy daemon` the test starts.
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

    @Test func theDaemonExampleDoesTheSameThroughPaperboyClient() async throws {
        let runtime = folder.appendingPathComponent("runtime")
        mkdir(runtime.path, 0o700)
        let config = folder.appendingPathComponent("paperboy.toml")
        try Data("[library]\npath = \"library\"\n".utf8).write(to: config)
        let daemon = try await DaemonProcess(config: config, runtime: runtime, log: folder.appendingPathComponent("daemon.log"))
        let (status, output) = try await run("DaemonEmbeddingExample", [daemon.socket.path, folder.path])
        #expect(status == 0, "\(output)")
        #expect(output.contains("saved \(folder.path)/library/Issues/2026-11-21/magazine.pdf"), "\(output)")
        #expect(output.contains(": delivered\n"), "\(output)")
        #expect(output.contains("2026-11-21: available, new: true, badge: 1"), "\(output)")
        let saved = try Data(contentsOf: folder.appendingPathComponent("library/Issues/2026-11-21/magazine.pdf"))
        #expect(saved.count == 3 << 20)

        // Launched again: nothing to reconnect, nothing downloaded twice, the shelf as it was.
        let (again, second) = try await run("DaemonEmbeddingExample", [daemon.socket.path, folder.path])
        #expect(again == 0, "\(second)")
        #expect(!second.contains("saved") && !second.contains("reconnecting"), "\(second)")
        #expect(second.contains("2026-11-21: available, new: true, badge: 1"), "\(second)")
        _ = await daemon.stop()
        #expect(daemon.process.terminationReason == .exit && daemon.process.terminationStatus == 0)
    }
}
