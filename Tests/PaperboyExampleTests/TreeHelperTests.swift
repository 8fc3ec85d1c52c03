import Foundation
import Paperboy
import PaperboyExec
import PaperboyTesting
import PaperboyTransportTesting
import Testing

/// The Python helper of `Examples/ExecPython`, run through ``ExecTransport``.
enum TreeHelper {
    static let path = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Examples/ExecPython/paperboy-transport-tree").path

    static func transport(root: URL) -> ExecTransport {
        var environment = ProcessInfo.processInfo.environment
        environment["PAPERBOY_TREE_TEST_HOOKS"] = "1"
        return ExecTransport(scheme: "tree", command: [path, "--root", root.path],
                             capabilities: [.resume, .validators, .challenges, .ranges], environment: environment)
    }
}

/// Serves resources from `ROOT/pub/…` as `tree://pub/…`, with the helper's test hooks for faults.
final class TreeFixture: TransportFixture, @unchecked Sendable {
    let files = FolderFixture { file in
        URL(string: "tree://pub/" + (file.path.components(separatedBy: "/pub/").last ?? ""))!
    }

    func publish(_ data: Data, as name: String) async throws -> URL { try await files.publish(data, as: "pub/\(name)") }
    func replace(_ url: URL, with data: Data) async throws { try await files.replace(url, with: data) }
    func missingURL() async throws -> URL { URL(string: "tree://pub/missing-\(UUID().uuidString)")! }

    func publishDropping(_ data: Data, as name: String, after bytes: Int) async throws -> URL? {
        URL(string: try await publish(data, as: name).absoluteString + "?drop-after=\(bytes)")
    }

    func publishIgnoringRanges(_ data: Data, as name: String) async throws -> URL? {
        URL(string: try await publish(data, as: name).absoluteString + "?ignore-range=1")
    }

    func publishProtected(_ data: Data, as name: String) async throws -> (url: URL, credential: Credential)? {
        (try await locked(data, name, password: "s3cret"), Credential(user: "reader", password: "s3cret"))
    }

    func publishRefusingCredentials(_ data: Data, as name: String) async throws -> URL? {
        try await locked(data, name, password: UUID().uuidString)
    }

    private func locked(_ data: Data, _ name: String, password: String) async throws -> URL {
        let folder = "locked-\(UUID().uuidString.prefix(8))"
        _ = try await files.publish(Data("reader:\(password)\n".utf8), as: "pub/\(folder)/.paperboy-auth")
        return try await publish(data, as: "\(folder)/\(name)")
    }
}

@Suite("Python exec transport example", .timeLimit(.minutes(2)))
struct TreeHelperTests {
    @Test(arguments: TransportConformance.Check.allCases)
    func conformance(_ check: TransportConformance.Check) async {
        let fixture = TreeFixture()
        let transport = TreeHelper.transport(root: fixture.files.folder)
        let outcome = await TransportConformance(transport, fixture: fixture).run(check)
        if check == .segments {
            // A helper sends one stream: it never splits into segments.
            #expect(outcome != .passed, "an exec helper cannot split; the check must say it was skipped")
        } else {
            #expect(outcome == .passed)
        }
        transport.retireIdleHelpers()
    }

    @Test func aHelperCrashMidTransferIsARetryableDropQuotingItsStderr() async throws {
        let fixture = TreeFixture()
        let url = try await fixture.publish(Data(count: 300_000), as: "crash.bin")
        let transport = TreeHelper.transport(root: fixture.files.folder)
        let sink = RecordingSink()
        do {
            try await transport.transfer(TransferJob(url: URL(string: url.absoluteString + "?crash-after=100000")!), into: sink)
            Issue.record("expected the crash to fail the transfer")
        } catch let error as TransportError {
            #expect(error.code == .connectionLost)
            #expect(error.isRetryable)
            #expect(error.message.contains("'paperboy-transport-tree'"))
            #expect(error.message.contains("crashing after 100000 bytes"))
        }
        #expect(sink.data.count == 100_000)
    }

    @Test func pathsLeavingTheServedFolderAreRefused() async throws {
        let fixture = TreeFixture()
        let transport = TreeHelper.transport(root: fixture.files.folder)
        do {
            try await transport.transfer(TransferJob(url: URL(string: "tree://pub/../../../etc/passwd")!), into: RecordingSink())
            Issue.record("expected access-denied")
        } catch let error as TransportError {
            #expect(error.code == .accessDenied)
            #expect(!error.isRetryable)
        }
        transport.retireIdleHelpers()
    }
}
