import Foundation
import Paperboy
import PaperboyTesting
import Synchronization

/// How a transfer under test ended.
enum TransferResult: Sendable, CustomStringConvertible {
    case finished
    case failed(any Error)
    /// The guard (a ``WaitBudget``, described with the wall time it took) was spent first.
    case timedOut(String)

    var isFinished: Bool {
        if case .finished = self { return true }
        return false
    }

    var transportError: TransportError? {
        if case .failed(let error as TransportError) = self { return error }
        return nil
    }

    var description: String {
        switch self {
        case .finished: return "success"
        case .failed(let error as TransportError): return "TransportError \(error.code) (retryable: \(error.isRetryable)): \(error)"
        case .failed(let error): return "\(type(of: error)): \(error)"
        case .timedOut(let budget): return "no result within \(budget)"
        }
    }
}

/// One transfer running in its own task, whose result can be awaited with a time limit even
/// when the transport ignores cancellation (the stuck task is then left behind, not awaited).
/// The limit is a ``WaitBudget``: a process starved by a busy machine does not spend it.
final class TransferRun: Sendable {
    private struct State {
        var result: TransferResult?
        var waiters: [CheckedContinuation<TransferResult, Never>] = []
    }

    private let state = Mutex<State>(State())
    private let task = Mutex<Task<Void, Never>?>(nil)
    private let sink: ConformanceSink

    init(transport: any Transport, job: TransferJob, sink: ConformanceSink) {
        self.sink = sink
        let handle = Task { [self] in
            do {
                try await transport.transfer(job, into: sink)
                finish(.finished)
            } catch {
                finish(.failed(error))
            }
        }
        task.withLock { $0 = handle }
    }

    var hasEnded: Bool { state.withLock { $0.result != nil } }

    func cancel() { task.withLock { $0?.cancel() } }

    /// The result, or `.timedOut` (after cancelling the task) when the budget `limit` is spent first.
    func result(within limit: Duration) async -> TransferResult {
        let timer = Task { [self] in
            var budget = WaitBudget(limit, turn: .milliseconds(50))
            while !budget.isSpent {
                guard (try? await budget.pause()) != nil else { return }
            }
            cancel()
            finish(.timedOut("\(budget)"))
        }
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<TransferResult, Never>) in
            let done = state.withLock { state -> TransferResult? in
                if state.result == nil { state.waiters.append(continuation) }
                return state.result
            }
            if let done { continuation.resume(returning: done) }
        }
        timer.cancel()
        return result
    }

    private func finish(_ result: TransferResult) {
        let waiters = state.withLock { state -> [CheckedContinuation<TransferResult, Never>]? in
            guard state.result == nil else { return nil }
            state.result = result
            defer { state.waiters = [] }
            return state.waiters
        }
        guard let waiters else { return }
        sink.markEnded()
        for waiter in waiters { waiter.resume(returning: result) }
    }
}
