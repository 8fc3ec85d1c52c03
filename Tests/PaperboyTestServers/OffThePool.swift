import Foundation
import Paperboy

/// Runs `body` on a thread of its own and returns its result. Starting a server waits for it
/// (processes to run, a port to answer); done on the cooperative pool, whose threads are as
/// few as the cores, that wait stalled every other test on a loaded machine.
public func offThePool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await onAThreadOfItsOwn(body)
}
