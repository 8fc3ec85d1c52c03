import Paperboy
import Testing

/// Runs `body` and returns the TransportError it throws (recording an issue if it does not).
public func transportError(_ body: () async throws -> Void) async -> TransportError? {
    do {
        try await body()
        Testing.Issue.record("expected a TransportError, the transfer succeeded")
    } catch let error as TransportError {
        return error
    } catch {
        Testing.Issue.record("expected a TransportError, got \(type(of: error)): \(error)")
    }
    return nil
}
