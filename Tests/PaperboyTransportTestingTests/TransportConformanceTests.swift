import Foundation
import Paperboy
import PaperboyFile
import PaperboyTransportTesting
import Testing

@Suite("TransportConformance", .timeLimit(.minutes(2)))
struct TransportConformanceTests {
    typealias Check = TransportConformance.Check

    @Test("a transport keeping the contract passes every check", arguments: Check.allCases)
    func referenceTransportPasses(_ check: Check) async {
        let store = MemoryStore()
        let outcome = await TransportConformance(ReferenceTransport(store: store), fixture: MemoryFixture(store: store)).run(check)
        #expect(outcome == .passed)
    }

    /// Each flaw breaks one promise; the check guarding it must report an issue naming itself.
    @Test("each broken promise is caught by its check", arguments: [
        (ReferenceTransport.Flaw.liesAboutOffset, Check.resume),
        (.buffersEverything, .backPressure),
        (.overlapsWrites, .backPressure),
        (.ignoresCancellation, .cancellation),
        (.echoesRecordedValidator, .changedValidatorRestarts),
        (.untypedNotFound, .notFound),
        (.dropsAreFatal, .droppedConnection),
        (.asksForeverWhenRefused, .authenticationRefused),
        (.skipsChallenges, .challenges),
        (.splicesWholeAnswers, .segments),
        (.overrunsRanges, .ranges),
    ])
    func flawIsCaught(_ flaw: ReferenceTransport.Flaw, _ check: Check) async {
        let store = MemoryStore()
        var options = TransportConformance.Options()
        options.cancellationDeadline = .milliseconds(500)
        let suite = TransportConformance(ReferenceTransport(store: store, flaw: flaw), fixture: MemoryFixture(store: store), options: options)
        var outcome = TransportConformance.Outcome.passed
        await withKnownIssue("\(flaw) breaks \(check)") {
            outcome = await suite.run(check)
        } matching: { issue in
            issue.comments.contains { $0.rawValue.hasPrefix("[\(check)]") }
        }
        guard case .failed(let messages) = outcome else {
            Issue.record("\(check) did not fail for \(flaw): \(outcome)")
            return
        }
        #expect(!messages.isEmpty)
    }

    @Test("checks the fixture cannot support are skipped with a reason, not passed")
    func unsupportedChecksAreSkipped() async {
        // FolderFixture has no authentication, drops or ignored ranges.
        let outcome = await TransportConformance(FileTransport(), fixture: FolderFixture()).run(.droppedConnection)
        guard case .skipped(let reason) = outcome else {
            Issue.record("expected a skip, got \(outcome)")
            return
        }
        #expect(reason.contains("publishDropping"))
    }
}

@Suite("FileTransport conformance", .timeLimit(.minutes(2)))
struct FileTransportConformanceTests {
    static let unsupported: Set<TransportConformance.Check> = [
        .ignoredRangeRestarts, .authenticationRefused, .droppedConnection, .challenges, .segments,
    ]

    @Test(arguments: TransportConformance.Check.allCases)
    func conformance(_ check: TransportConformance.Check) async {
        let outcome = await TransportConformance(FileTransport(), fixture: FolderFixture()).run(check)
        if Self.unsupported.contains(check) {
            #expect(outcome != .passed, "a local file cannot \(check); the check must say it was skipped")
        } else {
            #expect(outcome == .passed)
        }
    }
}
