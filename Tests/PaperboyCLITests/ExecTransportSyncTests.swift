#if canImport(Glibc)
import Glibc
#endif
import Foundation
import PaperboyTestServers
import PaperboyTesting
import Testing

/// In process and through a daemon (issue 27), whose `[[transports]]` and environment start the
/// helpers (docs/Daemon.md: transports are library-wide).
@Suite("paperboy sync with out-of-process transports", .timeLimit(.minutes(2)))
struct ExecTransportSyncTests {
    let workspace = Workspace()

    static let treeHelper = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Examples/ExecPython/paperboy-transport-tree").path

    func config(transports: String = "", asset: String = "tree://issues/2026-11/magazine.pdf", sha: String) -> URL {
        workspace.write("""
            [library]
            path = "lib"
            \(transports)
            [[issues]]
            name = "2026-11-21"
            date = 2026-11-21
              [[issues.assets]]
              url = "\(asset)"
              sha256 = "\(sha)"
              path = "magazine.pdf"
            """, to: "paperboy.toml")
    }

    func publish() -> Data {
        let pdf = randomData(700_000, seed: 131)
        _ = workspace.write(pdf, to: "pub/issues/2026-11/magazine.pdf")
        return pdf
    }

    /// Runs `sync` on `file` by `route` in the workspace (a helper's working folder is that of the
    /// process holding the library: in process the command's, else the daemon's; roots are
    /// given absolute), with `environment` (the daemon's too).
    func sync(_ route: CLIRoute, _ file: URL, environment: [String: String] = [:]) async throws -> CLIResult {
        let cli = RoutedCLI(route, workspace: workspace, daemonEnvironment: environment)
        defer { cli.stop() }
        try await cli.start(libraryWideOf: file)
        return try await cli.run(["sync", "--config", file.path], in: workspace.url, environment: environment)
    }

    @Test(arguments: CLIRoute.allCases)
    func syncDeliversThroughAConfiguredPythonHelper(_ route: CLIRoute) async throws {
        let pdf = publish()
        let file = config(transports: """
            [[transports]]
            scheme = "tree"
            command = ["\(Self.treeHelper)", "--root", "\(workspace.path("pub").path)"]
            """, sha: sha256Hex(pdf))
        let result = try await sync(route, file)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("1 of 1 asset(s) delivered"))
        #expect(try Bytes(Data(contentsOf: workspace.path("lib/Issues/2026-11-21/magazine.pdf"))) == Bytes(pdf))
    }

    /// `ranges = true`: a corrected, indexed file through the helper fetches only its changed
    /// chunks (the summary says what was reused); without it, the whole file.
    @Test(arguments: CLIRoute.allCases, [true, false])
    func anIndexedFileThroughAHelperWithRangesFetchesOnlyItsChanges(_ route: CLIRoute, ranges: Bool) async throws {
        let (v1, v2) = try await IndexedVersions.made.value
        _ = workspace.write(v1, to: "pub/issues/v1.bin")
        _ = workspace.write(v2, to: "pub/issues/v2.bin")
        _ = workspace.write(try await offThePool { try IndexedVersions.index(of: v2) }, to: "pub/issues/v2.bin.pbidx")
        let transports = """
            [[transports]]
            scheme = "tree"
            command = ["\(Self.treeHelper)", "--root", "\(workspace.path("pub").path)"]
            ranges = \(ranges)
            """
        let first = try await sync(route, config(transports: transports, asset: "tree://issues/v1.bin", sha: sha256Hex(v1)))
        #expect(first.status == 0, "\(first.stderr)")
        let file = config(transports: transports, asset: "tree://issues/v2.bin", sha: sha256Hex(v2))
        try (try String(contentsOf: file, encoding: .utf8) + "\n  indexed = true\n").write(to: file, atomically: true, encoding: .utf8)
        let second = try await sync(route, file)
        #expect(second.status == 0, "\(second.stderr)")
        #expect(try Bytes(Data(contentsOf: workspace.path("lib/Issues/2026-11-21/magazine.pdf"))) == Bytes(v2))
        #expect(second.stdout.contains("% reused)") == ranges, "\(second.stdout)")
    }

    @Test(arguments: CLIRoute.allCases)
    func syncFindsPaperboyTransportSchemeOnThePath(_ route: CLIRoute) async throws {
        let pdf = publish()
        let bin = workspace.path("bin")
        try FileManager.default.createDirectory(at: bin, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: bin.appendingPathComponent("paperboy-transport-tree").path,
                                                   withDestinationPath: Self.treeHelper)
        let file = config(sha: sha256Hex(pdf))
        let path = bin.path + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin")
        let result = try await sync(route, file, environment: ["PATH": path, "PAPERBOY_TREE_ROOT": workspace.path("pub").path])
        switch route {
        case .inProcess:
            #expect(result.status == 0, "\(result.stderr)")
            #expect(try Bytes(Data(contentsOf: workspace.path("lib/Issues/2026-11-21/magazine.pdf"))) == Bytes(pdf))
        case .daemon:
            // By design: transports are the daemon's, and a scheme its configuration does not
            // enable fails (docs/Daemon.md, "The paperboy commands through the daemon"): its
            // configuration has no asset of the scheme for which to look the helper up on PATH.
            #expect(result.status == 1, "\(result.stderr)")
            #expect(result.stderr.contains("no transport for scheme 'tree'"), "\(result.stderr)")
        }
    }

    @Test(arguments: CLIRoute.allCases)
    func aMissingResourceFailsWithTheHelpersMessage(_ route: CLIRoute) async throws {
        _ = publish()
        let file = config(transports: """
            [[transports]]
            scheme = "tree"
            command = ["\(Self.treeHelper)", "--root", "\(workspace.path("pub").path)"]
            """, asset: "tree://issues/absent.pdf", sha: String(repeating: "0", count: 64))
        let result = try await sync(route, file)
        #expect(result.status == 1)
        #expect(result.stderr.contains("paperboy-transport-tree: no such file: tree://issues/absent.pdf"), "\(result.stderr)")
    }

    /// kill -9 of the core: the helper must not outlive it (PR_SET_PDEATHSIG, and end of input).
    // route: in process only: the core killed is the command's (through a daemon, the daemon
    // runs the helpers; its own kill -9 is DaemonTests' and KillResumeTests').
    @Test func aHelperDiesWithACoreKilledBySIGKILL() async throws {
        let pidFile = workspace.path("helper.pid")
        let helper = workspace.write("""
            #!/bin/sh
            echo $$ > "\(pidFile.path)"
            # Never answers: the core waits for the handshake.
            exec sleep 60
            """, to: "hanging-helper")
        chmod(helper.path, 0o755)
        let file = config(transports: """
            [[transports]]
            scheme = "tree"
            command = ["\(helper.path)"]
            """, sha: String(repeating: "0", count: 64))
        let process = try ChildProcess(CLI.executable.path, ["sync", "-q", "--config", file.path])
        defer { process.signal(SIGKILL) }
        var helperPID: Int32?
        try await eventually("the helper to start and write its pid") {
            helperPID = (try? String(contentsOf: pidFile, encoding: .utf8)).flatMap { Int32($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
            return helperPID != nil
        }
        let pid = try #require(helperPID)
        defer { if !Self.isDeadOrZombie(pid) { kill(pid, SIGKILL) } }
        #expect(kill(pid, 0) == 0)
        process.signal(SIGKILL)
        await CLI.waitForExit(process)
        try await eventually("helper \(pid) to die with the core") { Self.isDeadOrZombie(pid) }
    }

    static func isDeadOrZombie(_ pid: Int32) -> Bool {
        if kill(pid, 0) != 0 { return true }
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return true }
        return stat[stat.index(close, offsetBy: 2)] == "Z"
    }
}
