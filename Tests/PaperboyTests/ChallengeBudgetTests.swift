import Foundation
import Synchronization
import Testing
@testable import Paperboy
import PaperboyTesting

/// A transfer may raise at most `ChallengeBudget.limit` challenges (issue 16, case 5).
@Suite("Challenge budget", .timeLimit(.minutes(2)))
struct ChallengeBudgetTests {
    let folder = TempFolder()

    /// A source that asks for credentials again and again, whatever the answer.
    final class ChallengingTransport: Transport {
        /// Whether a `.cancelAuthenticationChallenge` answer ends the transfer (as our transports
        /// do) or is ignored (a hostile helper).
        let honoursCancel: Bool
        private let counts = Mutex<(attempts: Int, challenges: Int)>((0, 0))

        init(honoursCancel: Bool) { self.honoursCancel = honoursCancel }

        var schemes: Set<String> { ["ask"] }
        var capabilities: TransportCapabilities { [.challenges] }
        var attempts: Int { counts.withLock { $0.attempts } }
        var challenges: Int { counts.withLock { $0.challenges } }

        func transfer(_ job: TransferJob, into sink: any TransferSink) async throws {
            counts.withLock { $0.attempts += 1 }
            // A bound of its own, so that the core without one fails this test instead of hanging it.
            for refused in 0..<1_000 {
                counts.withLock { $0.challenges += 1 }
                let answer = await sink.challenge(AuthChallenge(kind: .httpBasic, url: job.url, previousFailureCount: refused))
                if case .cancelAuthenticationChallenge = answer, honoursCancel {
                    throw TransportError(.authenticationFailed, "refused", url: job.url)
                }
                try Task.checkCancellation()
            }
            throw TransportError(.connectionLost, "asked 1,000 times", url: job.url)
        }
    }

    @Test(arguments: [true, false])
    func aSourceThatKeepsChallengingFailsAfterTheLimit(honoursCancel: Bool) async throws {
        let transport = ChallengingTransport(honoursCancel: honoursCancel)
        let library = try Library.open(at: folder.file("library"), transports: TransportRegistry([transport]),
                                       configuration: Library.Configuration.forTests(attempts: 3))
        let url = URL(string: "ask://example.com/issue.pdf")!
        let asset = try await library.addIssue(name: "i", date: Date()).addAsset(AssetRequest(url: url))
        // An app that answers every challenge with a credential.
        let delegate = RecordingDelegate(challengeAnswer: { _ in .useCredential(Credential(user: "reader", password: "secret")) })
        try await asset.download(delegate: delegate)
        await delegate.waitForEnd()
        guard case .failed(let code, let message) = delegate.events.last else {
            Testing.Issue.record("expected a failure, got \(delegate.events.suffix(1))")
            await library.close()
            return
        }
        #expect(code == "transport")
        #expect(message.contains("ask://example.com/issue.pdf raised more than 16 authentication challenges"), "\(message)")
        #expect(message.contains("authentication-failed"), "\(message)")
        #expect(!message.contains("secret"))
        // Answered sixteen times, the seventeenth refused without asking the app; not retried.
        #expect(transport.challenges == 17)
        #expect(delegate.events.filter { if case .challenge = $0 { true } else { false } }.count == 16)
        #expect(transport.attempts == 1)
        await library.close()
    }

    @Test func fetchingDataIsBoundedToo() async throws {
        let transport = ChallengingTransport(honoursCancel: false)
        let library = try Library.open(at: folder.file("library"), transports: TransportRegistry([transport]),
                                       configuration: Library.Configuration.forTests(attempts: 3))
        let url = URL(string: "ask://example.com/catalog.json")!
        await #expect {
            _ = try await library.fetchData(from: url)
        } throws: { error in
            "\(error)".contains("ask://example.com/catalog.json raised more than 16 authentication challenges")
        }
        #expect(transport.challenges == 17)
        #expect(transport.attempts == 1)
        await library.close()
    }
}
