@_exported import PaperboyConformance
import Testing

extension TransportConformance {
    /// Runs one check, recording its failures (or why it was skipped) as Swift Testing issues.
    ///
    /// Each failure is an issue whose message starts with the check's name (`[resume] …`) and
    /// points at the caller's line; a skipped check is a warning saying why. The outcome is also
    /// returned, for tests that want to assert on it.
    @discardableResult
    public func run(_ check: Check, sourceLocation: SourceLocation = #_sourceLocation) async -> Outcome {
        let outcome = await evaluate(check)
        switch outcome {
        case .passed:
            break
        case .failed(let messages):
            for message in messages { Issue.record("[\(check)] \(message)", sourceLocation: sourceLocation) }
        case .skipped(let reason):
            Issue.record("[\(check)] skipped: \(reason)", severity: .warning, sourceLocation: sourceLocation)
        }
        return outcome
    }

    /// Runs every check in turn and returns their outcomes.
    @discardableResult
    public func runAll(sourceLocation: SourceLocation = #_sourceLocation) async -> [Check: Outcome] {
        var outcomes: [Check: Outcome] = [:]
        for check in Check.allCases {
            outcomes[check] = await run(check, sourceLocation: sourceLocation)
        }
        return outcomes
    }
}
