import Foundation
import Paperboy
import Synchronization

/// The checks every transport must pass: from the transport author's own test target
/// (`PaperboyTransportTesting`, Swift Testing) or from the command line (`paperboy conformance`).
///
/// ```swift
/// import PaperboyTransportTesting
/// import Testing
///
/// @Test(arguments: TransportConformance.Check.allCases)
/// func conformance(_ check: TransportConformance.Check) async {
///     await TransportConformance(MyTransport(), fixture: MyFixture()).run(check)
/// }
/// ```
///
/// ``evaluate(_:)`` runs one check and returns its ``Outcome``: the breaches of the contract it
/// found, or why the fixture could not support it (no URL that drops, no authentication) — a
/// skipped check is never reported as passed. `PaperboyTransportTesting` adds `run(_:)`, which
/// records the same messages as Swift Testing issues starting with the check's name (`[resume] …`).
public struct TransportConformance: Sendable {
    /// One promise of the ``Transport`` contract.
    public enum Check: String, CaseIterable, Sendable, CustomStringConvertible {
        /// The whole resource arrives byte for byte, after exactly one `begin` at offset 0
        /// (also for an empty resource).
        case fullDownload = "full-download"
        /// A transfer from an offset reports that offset and sends exactly the bytes after it;
        /// through a real `Library`, a transfer cut midway resumes and ends byte-identical.
        case resume
        /// A resume whose recorded validator no longer matches starts over from 0 (or rethrows
        /// the sink's ``TransferRestart``); two versions are never spliced.
        case changedValidatorRestarts = "changed-validator-restarts"
        /// A source that ignores the resume request is reported at offset 0, and through a real
        /// `Library` a partial file ends byte-identical.
        case ignoredRangeRestarts = "ignored-range-restarts"
        /// A missing resource fails with `.notFound`, not retryable, without data.
        case notFound = "not-found"
        /// Refused credentials fail with `.authenticationFailed` (or `.accessDenied`), not retryable.
        case authenticationRefused = "authentication-refused"
        /// A connection dropped mid-transfer fails with a retryable error after a prefix of the bytes.
        case droppedConnection = "dropped-connection"
        /// A slow sink is never flooded: chunks stay bounded, calls never overlap, bytes stay in order
        /// (through both `write` and `tryWrite`/`whenWritable`).
        case backPressure = "back-pressure"
        /// Cancelling the task ends the transfer promptly, with no call to the sink afterwards.
        case cancellation
        /// Challenges reach the sink, their answers are used, and a cancelled challenge fails. The
        /// credential answers only challenges from inside the protected URL's folder (its
        /// ``URLScope``): one from where a redirect led fails the check, unanswered.
        case challenges
        /// A transport declaring ``TransportCapabilities/ranges`` fetches exactly a job's range
        /// (``TransferJob/rangeEnd``), with or without a validator, and says so in `begin`
        /// (``TransferResponse/end``); from a source that ignores ranges, `begin` still tells
        /// which bytes come.
        case ranges
        /// A transport declaring ``TransportCapabilities/segments``, allowed several connections,
        /// fetches a large resource through sink segments, byte-identical; from a source that
        /// answers ranges with the whole resource it still ends byte-identical, and no segment
        /// holds bytes of another offset.
        case segments

        public var description: String { rawValue }
    }

    /// How one check ended.
    public enum Outcome: Sendable, Equatable {
        /// Every expectation held.
        case passed
        /// These expectations failed (each was also recorded as an issue).
        case failed([String])
        /// The check could not run, for this reason (recorded as a warning).
        case skipped(String)
    }

    /// Sizes and limits used by the checks.
    public struct Options: Sendable {
        /// Size of the resource used by most checks; odd on purpose, to catch chunk-boundary bugs.
        public var resourceSize = 1_500_007
        /// Size of the resource used by the back-pressure and cancellation checks.
        public var largeResourceSize = 6 << 20
        /// The largest chunk a transport may hand to one `write`.
        public var maxBytesPerWrite = 2 << 20
        /// How long a cancelled transfer may take to end. Like ``transferTimeout``, counted as a
        /// `WaitBudget` (PaperboyTesting): time the whole process was not scheduled does not count.
        public var cancellationDeadline: Duration = .seconds(5)
        /// How long any one transfer may take before the check gives up on it (a `WaitBudget`).
        public var transferTimeout: Duration = .seconds(30)
        /// Job timeouts passed to the transport.
        public var connectTimeout: Duration = .seconds(10)
        public var idleTimeout: Duration = .seconds(10)
        /// Size of the resource the segments check fetches over several connections: above the
        /// HTTP transport's 32 MiB, below which it does not split.
        public var rangedResourceSize = 40 << 20
        /// Connections the segments check allows one transfer (``TransferJob/connectionsPerAsset``).
        public var rangeConnections = 4

        /// The defaults.
        public init() {}
    }

    /// The transport under test.
    public let transport: any Transport
    /// Where the test resources are published.
    public let fixture: any TransportFixture
    /// Sizes and limits.
    public var options: Options

    /// Creates the suite for `transport`, publishing through `fixture`.
    public init(_ transport: any Transport, fixture: any TransportFixture, options: Options = Options()) {
        self.transport = transport
        self.fixture = fixture
        self.options = options
    }

    /// Runs one check and returns how it ended, without reporting anything itself.
    public func evaluate(_ check: Check) async -> Outcome {
        let recorder = CheckRecorder(check: check)
        do {
            switch check {
            case .fullDownload: try await checkFullDownload(recorder)
            case .resume: try await checkResume(recorder)
            case .changedValidatorRestarts: try await checkChangedValidator(recorder)
            case .ignoredRangeRestarts: try await checkIgnoredRange(recorder)
            case .notFound: try await checkNotFound(recorder)
            case .authenticationRefused: try await checkAuthenticationRefused(recorder)
            case .droppedConnection: try await checkDroppedConnection(recorder)
            case .backPressure: try await checkBackPressure(recorder)
            case .cancellation: try await checkCancellation(recorder)
            case .challenges: try await checkChallenges(recorder)
            case .ranges: try await checkRanges(recorder)
            case .segments: try await checkSegments(recorder)
            }
        } catch let skip as Skip {
            recorder.skip(skip.reason)
        } catch {
            recorder.fail("unexpected error: \(error)")
        }
        return recorder.outcome
    }
}

/// Thrown inside a check to skip it.
struct Skip: Error {
    var reason: String
}

/// Collects one check's failures, or why it was skipped.
final class CheckRecorder: Sendable {
    let check: TransportConformance.Check
    private let failures = Mutex<[String]>([])
    private let skipped = Mutex<String?>(nil)

    init(check: TransportConformance.Check) {
        self.check = check
    }

    func fail(_ message: String) {
        failures.withLock { $0.append(message) }
    }

    /// Records `message` as a failure unless `condition` holds; returns `condition`.
    @discardableResult
    func expect(_ condition: Bool, _ message: @autoclosure () -> String) -> Bool {
        if !condition { fail(message()) }
        return condition
    }

    func skip(_ reason: String) {
        skipped.withLock { $0 = reason }
    }

    var outcome: TransportConformance.Outcome {
        if let reason = skipped.withLock({ $0 }) { return .skipped(reason) }
        let failed = failures.withLock { $0 }
        return failed.isEmpty ? .passed : .failed(failed)
    }
}
