import Foundation
import PaperboyTesting
import Testing

/// `Examples/systemd/paperboy.service`, checked by systemd itself where it is installed.
@Suite("systemd unit", .timeLimit(.minutes(2)))
struct SystemdUnitTests {
    let workspace = Workspace()
    static let unit = PublisherTests.repositoryRoot.appendingPathComponent("Examples/systemd/paperboy.service")
    static let analyzer = URL(fileURLWithPath: "/usr/bin/systemd-analyze")

    /// `systemd-analyze verify` accepts the unit, its ExecStart pointed at the built paperboy
    /// (verify wants an executable that exists); a unit naming a directive systemd does not know
    /// is refused, so the check can fail.
    @Test func theUserUnitPassesSystemdAnalyzeVerify() async throws {
        guard FileManager.default.isExecutableFile(atPath: Self.analyzer.path) else {
            print("systemd-analyze is not installed: the unit is not verified")
            return
        }
        let text = try String(contentsOf: Self.unit, encoding: .utf8)
        #expect(text.contains("Type=notify") && text.contains("ExecReload=/bin/kill -HUP $MAINPID"))
        let runnable = text.replacingOccurrences(of: "/usr/local/bin/paperboy", with: CLI.executable.path)
        let good = workspace.write(Data(runnable.utf8), to: "paperboy.service")
        let verified = try await CLI.run(["verify", good.path], executable: Self.analyzer)
        #expect(verified.status == 0, "\(verified.stderr)")
        #expect(!verified.stderr.contains("paperboy.service:"), "\(verified.stderr)")

        let broken = workspace.write(Data(runnable.replacingOccurrences(of: "UMask=0077", with: "UMask=0077\nFrobnicate=yes").utf8),
                                     to: "broken.service")
        let refused = try await CLI.run(["verify", broken.path], executable: Self.analyzer)
        #expect(refused.stderr.contains("Frobnicate"), "\(refused.stderr)")
    }

    /// `paperboy.socket` (socket activation) passes `systemd-analyze verify` next to the service
    /// it starts, listening where the daemon would, private; a socket unit with an unknown
    /// directive is refused.
    @Test func theSocketUnitPassesSystemdAnalyzeVerify() async throws {
        guard FileManager.default.isExecutableFile(atPath: Self.analyzer.path) else {
            print("systemd-analyze is not installed: the socket unit is not verified")
            return
        }
        let socket = try String(contentsOf: Self.unit.deletingLastPathComponent().appendingPathComponent("paperboy.socket"), encoding: .utf8)
        #expect(socket.contains("ListenStream=%t/paperboy/daemon.sock") && socket.contains("SocketMode=0600")
                && socket.contains("DirectoryMode=0700"))
        let service = try String(contentsOf: Self.unit, encoding: .utf8).replacingOccurrences(of: "/usr/local/bin/paperboy", with: CLI.executable.path)
        _ = workspace.write(Data(service.utf8), to: "units/paperboy.service")
        let good = workspace.write(Data(socket.utf8), to: "units/paperboy.socket")
        let verified = try await CLI.run(["verify", good.path], executable: Self.analyzer)
        #expect(verified.status == 0, "\(verified.stderr)")
        #expect(!verified.stderr.contains("paperboy.socket:"), "\(verified.stderr)")

        _ = workspace.write(Data(service.utf8), to: "broken/paperboy.service")
        let broken = workspace.write(Data(socket.replacingOccurrences(of: "[Socket]", with: "[Socket]\nListenFrobs=1").utf8),
                                     to: "broken/paperboy.socket")
        let refused = try await CLI.run(["verify", broken.path], executable: Self.analyzer)
        #expect(refused.stderr.contains("ListenFrobs"), "\(refused.stderr)")
    }
}
