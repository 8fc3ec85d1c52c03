import Foundation
import Paperboy

/// A configuration file location that need not exist.
let fixtureFile = URL(fileURLWithPath: "/srv/paperboy/paperboy.toml")

/// An environment with a home folder and nothing else.
let fixtureEnvironment = ["HOME": "/home/reader"]

/// Runs `body` on a thread of its own and returns its result.
///
/// Fuzz loops and big parses hold a thread for seconds in a debug build; on the cooperative
/// pool, whose threads are as few as the cores, they delay every other test's timed steps.
/// (PaperboyTestServers' `offThePool`, which this target does not depend on; both are the
/// core's `onAThreadOfItsOwn`.) Assert on the result after it returns: issues are recorded from
/// the test's task.
func offThePool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await onAThreadOfItsOwn(body)
}
